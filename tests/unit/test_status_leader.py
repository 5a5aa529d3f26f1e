"""`inspector status`'s first line: the firewall leader recorded in the store, or why
there is none."""

from inspector.cmd import status_cmd
from inspector.store import Store, database_url, schema


def test_no_leader_says_who_may_run(conf):
    schema.upgrade(database_url(conf))
    assert status_cmd._leader(conf) == (
        "none elected yet (only workers with a real PXE driver run for it)"
    )


def test_the_recorded_leader_with_its_term(conf):
    url = database_url(conf)
    schema.upgrade(url)
    store = Store.from_url(url)
    try:
        store.claim_leadership("firewall", "host1-4242")
        store.claim_leadership("firewall", "host2-4343")
    finally:
        store.close()
    assert status_cmd._leader(conf).startswith("host2-4343 (term 2, elected ")
