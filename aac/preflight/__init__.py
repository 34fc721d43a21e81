"""`python -m aac.preflight`: a recipe's first steps measured on this hardware and its full run projected
(`__main__.py`); the versions it checks (`versions.py`), what it asks each piece (`pieces.py`), the
projection (`projection.py`), the synthetic advantages that make a random model's update run (`synthetic.py`)."""

from aac.preflight.projection import Measured, project
from aac.preflight.versions import VLLM_SUPPORTED, VersionError, check_vllm, installed

__all__ = ["VLLM_SUPPORTED", "Measured", "VersionError", "check_vllm", "installed", "project"]
