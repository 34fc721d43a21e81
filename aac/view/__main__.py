"""`python -m aac.view dirs=DIR[,DIR2] [out=FILE.html]`: one self-contained page of a training run's kept
episodes or an eval's episodes; with DIR2, the same functions under both side by side."""

from __future__ import annotations

from aac.cli import Key, UsageError, items, parse_keys
from aac.errors import entry_point
from aac.view.page import write_page

USAGE = "usage: python -m aac.view dirs=DIR[,DIR2] [out=FILE.html]"
KEYS = (Key("dirs", "a training run dir or an aac.eval dir; two, comma-separated: side by side", items, [],
            required=True),
        Key("out", "the page to write (default: DIR/episodes.html)"))


@entry_point
def main(argv: list[str] | None = None) -> None:
    args = parse_keys(argv, KEYS, USAGE, doc=__doc__)
    if len(args.dirs) > 2:
        raise UsageError(f"dirs={','.join(args.dirs)}: at most two (DIR[,DIR2])")
    path = write_page(args.dirs, args.out or f"{args.dirs[0]}/episodes.html")
    print(path.resolve())


if __name__ == "__main__":
    main()
