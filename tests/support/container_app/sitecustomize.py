"""Started in the test step operator's processes (tests/support/clean_env_step_operator.py), before ZenML.

ZenML's step entrypoint works in /app, the images' working folder where their code lies: it creates /app and moves
there. A test must not create /app on the machine (nor could it without root): in a process whose environment names
the code's folder in LLM_EVAL_APP_DIR, /app is that folder, for these two calls only.
"""

import os

_APP = os.environ.get("LLM_EVAL_APP_DIR")

if _APP:
    _makedirs, _chdir = os.makedirs, os.chdir

    def _makedirs_app(name, *args, **kwargs):
        return None if os.fspath(name) == "/app" else _makedirs(name, *args, **kwargs)

    def _chdir_app(path):
        return _chdir(_APP if os.fspath(path) == "/app" else path)

    os.makedirs, os.chdir = _makedirs_app, _chdir_app
