"""Run configs the CLI tests write: the session's engine generates, the OpenAI-compatible stub judges, and the
checks nothing in those tests reads are off."""

import yaml


def stub_judged(path, base_url, *, rows, max_tokens, judge_model="stub-judge", cache=False, **parameters):
    """Write to `path` a config of `rows` rows and answers of at most `max_tokens`, judged one request at a time by
    the stub at `base_url` under the name `judge_model` (with `cache`, its verdicts kept in the judge cache), with any
    other `parameters` sections as given; returns `path`."""
    path.write_text(yaml.safe_dump({"parameters": {
        "dataset": {"limit": rows}, "sampling": {"max_tokens": max_tokens},
        "judge": {"backend": "openai", "model": judge_model, "base_url": base_url, "cache": cache, "max_concurrency": 1},
        "judge_check": {"rows": 0}, "similarity": {"enabled": False}, "pairwise": {"enabled": False}, **parameters,
    }}))
    return path
