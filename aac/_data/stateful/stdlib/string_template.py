"""A text template with $-placeholders (string.Template): new(template) holds the template text; {bind}(name,
value) sets the value of placeholder name and returns how many names are bound; {render}() substitutes every
$name / ${{name}} with its bound value ($$ gives $), raising KeyError for a placeholder with no value and
ValueError for a malformed one; {safe_render}() does the same but leaves unbound or malformed placeholders as
written; {unbind}(name) forgets a value (KeyError when it was not bound)."""
import string


class Template:
    def __init__(self, template):
        self.template = string.Template(template)
        self.values = {}

    def bind(self, name, value):
        self.values[name] = value
        return len(self.values)

    def render(self):
        return self.template.substitute(self.values)

    def safe_render(self):
        return self.template.safe_substitute(self.values)

    def unbind(self, name):
        del self.values[name]
        return len(self.values)


SEEDS = [
    [("new", ("Hello $name!",)), ("bind", ("name", "Ann")), ("render", ())],
    [("new", ("$a + ${b} = $$c",)), ("bind", ("a", 1)), ("safe_render", ()), ("render", ())],
    [("new", ("cost: $x",)), ("bind", ("x", "5")), ("unbind", ("x",)), ("unbind", ("x",)), ("safe_render", ())],
]
