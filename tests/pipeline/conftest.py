from guard.conftest import start_guarded  # noqa: F401 - the same real gateway + responding upstream
