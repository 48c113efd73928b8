"""Prepare the local ZenML dashboard; `make dashboard` runs this, then `zenml login --local`,
which serves this machine's store.

    .venv/bin/python tools/dashboard.py

A fresh server sends its user to a sign-up survey before any page; the local user is marked
as onboarded here instead. ZenML's REST API drops that field on update (0.98), so it is set
in the local SQL store, before the client is switched to the server.
"""

from __future__ import annotations

import logging

logger = logging.getLogger(__name__)


def skip_onboarding() -> bool:
    """Mark the local user as onboarded so the dashboard opens on its pages; False if the store is not local."""
    from zenml.client import Client
    from zenml.enums import StoreType

    client = Client()
    if client.zen_store.type != StoreType.SQL:
        logger.info("The client already talks to a ZenML server: onboarding left as it is.")
        return False
    user = client.active_user
    metadata = {**(user.user_metadata or {}), "finished_onboarding_survey": True}
    client.update_user(user.id, updated_email_opt_in=False, updated_metadata=metadata)
    return True


if __name__ == "__main__":
    skip_onboarding()
