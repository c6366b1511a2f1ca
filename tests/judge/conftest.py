from support.fixtures import start_guarded  # noqa: F401 - a real gateway in front of a responding upstream
