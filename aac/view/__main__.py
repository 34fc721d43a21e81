"""`python -m aac.view DIR [DIR2] --out FILE.html`: one self-contained page of a training run's kept
episodes or an eval's episodes; with DIR2, the same functions under both side by side."""

from __future__ import annotations

import argparse

from aac.errors import entry_point
from aac.view.page import write_page


@entry_point
def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m aac.view", description=__doc__.splitlines()[0])
    parser.add_argument("dirs", nargs="+", metavar="DIR", help="a training run dir or an aac.eval dir (two: side by side)")
    parser.add_argument("--out", help="the page to write (default: DIR/episodes.html)")
    args = parser.parse_args(argv)
    if len(args.dirs) > 2:
        parser.error("at most two dirs (DIR [DIR2])")
    path = write_page(args.dirs, args.out or f"{args.dirs[0]}/episodes.html")
    print(path.resolve())


if __name__ == "__main__":
    main()
