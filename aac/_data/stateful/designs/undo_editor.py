"""A text editor with undo and redo: new() starts with empty text; {type}(s) appends s and returns the text;
{delete}(n) removes the last n characters (all of them when n is larger) and returns the text; {undo}() reverts the
last type or delete and returns the text (IndexError when there is nothing to undo); {redo}() re-applies the last
undone edit and returns the text (IndexError when there is nothing to redo); a new edit clears what could be
redone; {text}() returns the text."""


class Editor:
    def __init__(self):
        self.content = ""
        self.undo_stack = []
        self.redo_stack = []

    def _edit(self, new):
        self.undo_stack.append(self.content)
        self.redo_stack = []
        self.content = new
        return self.content

    def type(self, s):
        return self._edit(self.content + s)

    def delete(self, n):
        return self._edit(self.content[: max(0, len(self.content) - n)])

    def undo(self):
        if not self.undo_stack:
            raise IndexError("nothing to undo")
        self.redo_stack.append(self.content)
        self.content = self.undo_stack.pop()
        return self.content

    def redo(self):
        if not self.redo_stack:
            raise IndexError("nothing to redo")
        self.undo_stack.append(self.content)
        self.content = self.redo_stack.pop()
        return self.content

    def text(self):
        return self.content


SEEDS = [
    [("new", ()), ("type", ("hello",)), ("delete", (2,)), ("undo", ()), ("redo", ())],
    [("new", ()), ("undo", ()), ("type", ("ab",)), ("undo", ()), ("type", ("c",)), ("redo", ())],
]
