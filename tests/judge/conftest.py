from support.fixtures import start_guarded
