"""An INI-style settings store (configparser.ConfigParser): new() makes it empty; {add_section}(name) adds a
section (DuplicateSectionError when it exists) and returns the section names; {set}(section, key, value) stores
the string value (NoSectionError when the section is missing); {get}(section, key) returns the stored string
(NoSectionError / NoOptionError when missing); {get_int}(section, key) returns it converted with int (ValueError
when it is not an integer); {options}(section) returns the section's keys in insertion order. Keys are
case-insensitive (stored lower-cased)."""
import configparser


class Settings:
    def __init__(self):
        self.parser = configparser.ConfigParser(interpolation=None)

    def add_section(self, name):
        self.parser.add_section(name)
        return self.parser.sections()

    def set(self, section, key, value):
        self.parser.set(section, key, value)
        return value

    def get(self, section, key):
        return self.parser.get(section, key)

    def get_int(self, section, key):
        return self.parser.getint(section, key)

    def options(self, section):
        return self.parser.options(section)


SEEDS = [
    [("new", ()), ("add_section", ("db",)), ("set", ("db", "Port", "5432")), ("get_int", ("db", "port"))],
    [("new", ()), ("set", ("x", "k", "v")), ("add_section", ("x",)), ("get", ("x", "k"))],
    [("new", ()), ("add_section", ("a",)), ("add_section", ("a",)), ("set", ("a", "n", "ten")),
     ("get_int", ("a", "n")), ("options", ("a",))],
]
