"""The offline data builder: sources, anonymisation, inferred validators, coverage-guided inputs.

CLI: `python -m aac.data.build source=humaneval out=rows.jsonl`. Knows nothing of training."""
