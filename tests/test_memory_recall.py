"""Recall: remembered conversations are found again among thousands, by a topical question."""

from __future__ import annotations

import random
from pathlib import Path

from hermes_tui.memory.store import MemoryStore

TOPICS = """upload download test build deploy docker kubernetes database postgres redis cache
login password token api server client timeout retry queue worker cron backup restore
migration schema index query report chart invoice payment email template config logging
monitoring alert disk memory cpu network proxy nginx certificate dns python javascript rust
flask react webpack linter formatter release version branch merge conflict review""".split()
VERBS = "fixed debugged added removed upgraded configured investigated wrote refactored tuned".split()

# (summary, one message of the conversation, the question a user asks weeks later)
REMEMBERED = [
    ("Fixed the flaky upload test by retrying the S3 mock when it times out in CI.",
     "the upload test fails one run in ten on CI", "how did we fix the flaky upload test"),
    ("Moved the nightly Postgres backup to a cron job that writes to the NAS.",
     "backups should land on the NAS every night", "where do the postgres backups go now"),
    ("Renewed the Let's Encrypt certificate and added a systemd timer for renewal.",
     "the certificate for the site expired", "certificate renewal timer setup"),
    ("Tracked a memory leak in the image resizer to an unbounded LRU cache.",
     "the resizer process keeps growing", "image resizer memory leak cause"),
    ("Set up Grafana alerts for disk usage above 85 percent on the database hosts.",
     "we ran out of disk on db2 last week", "disk usage alerts grafana"),
    ("Rewrote the invoice PDF template with WeasyPrint and fixed the VAT rounding.",
     "invoices show the wrong VAT total", "invoice vat rounding fix"),
    ("Configured nginx rate limiting for the login endpoint after a brute-force attempt.",
     "someone is hammering /login", "nginx rate limit login brute force"),
    ("Migrated the React app from webpack to Vite; build time fell from 90 s to 12 s.",
     "the frontend build takes forever", "vite migration build time"),
    ("Debugged the Redis queue stalling: workers never acked jobs after a timeout.",
     "jobs stay in the queue forever", "redis queue workers stalled jobs"),
    ("Planned the Kyoto trip: ryokan booked for three nights, JR pass ordered.",
     "help me plan two weeks in Japan", "kyoto ryokan booking trip"),
    ("Wrote a Rust CLI that dedupes photos by perceptual hash.",
     "I have thousands of duplicate photos", "rust photo dedupe perceptual hash"),
    ("Tuned the Postgres autovacuum settings for the events table bloat.",
     "the events table is 40 GB but has few rows", "events table bloat autovacuum"),
    ("Resolved the merge conflict in the payments branch by keeping the new refund flow.",
     "git says conflict in payments/refund.py", "payments branch merge conflict refund"),
    ("Added structured JSON logging with request ids to the Flask API.",
     "logs are impossible to correlate", "json logging request id flask"),
    ("Investigated DNS failures in Kubernetes: ndots 5 caused slow external lookups.",
     "pods take seconds to resolve api.stripe.com", "kubernetes dns slow lookups ndots"),
    ("Set up the sourdough starter schedule: feed at 8 and 20, bake on Saturdays.",
     "my sourdough starter smells like acetone", "sourdough starter feeding schedule"),
    ("Upgraded the Django project from 3.2 to 4.2 and replaced the removed url() calls.",
     "django upgrade broke our urls", "django 4.2 upgrade url calls"),
    ("Built a cron report that emails weekly churn numbers to the sales team.",
     "sales wants churn every monday", "weekly churn report email"),
    ("Diagnosed the slow CSV export: an N+1 query per row; fixed with one join.",
     "exporting users to CSV takes minutes", "slow csv export n+1 query"),
    ("Configured a WireGuard VPN between the office and the Hetzner servers.",
     "we need the office to reach the servers privately", "wireguard vpn office hetzner"),
]
DISTRACTORS = 3000


def distractor(rng: random.Random) -> tuple[str, str]:
    words = rng.sample(TOPICS, 4)
    summary = (f"{rng.choice(VERBS).capitalize()} the {words[0]} {words[1]} and "
               f"{rng.choice(VERBS)} the {words[2]} {words[3]}.")
    return summary, f"can you look at the {words[0]} {words[2]} problem"


def test_recall_at_5_of_remembered_conversations(tmp_path: Path) -> None:
    rng = random.Random(5)
    with MemoryStore(tmp_path / "memory.sqlite3") as store:
        targets = {}
        slots = set(rng.sample(range(DISTRACTORS), len(REMEMBERED)))
        remembered = iter(REMEMBERED)
        for i in range(DISTRACTORS):
            summary, message = distractor(rng)
            if i in slots:
                summary, message, question = next(remembered)
            sid = store.new_session()
            store.bulk_add_messages(sid, [{"role": "user", "content": message},
                                          {"role": "assistant", "content": "Let me look."}])
            store.set_summary(sid, summary)
            if i in slots:
                targets[question] = sid

        found = 0
        for question, sid in targets.items():
            ranked = [s.session_id for s in store.search_sessions(question, limit=5)]
            for hit in store.search(question, limit=20):  # what search_memory lists next
                if hit.session_id not in ranked:
                    ranked.append(hit.session_id)
            found += sid in ranked[:5]
        recall = found / len(targets)
        print(f"\nrecall@5 over {len(targets)} remembered conversations among {DISTRACTORS:,}: {recall:.2f}")
        assert recall >= 0.9


def test_summaries_are_searchable_and_forgotten_with_the_session(tmp_path: Path) -> None:
    with MemoryStore(tmp_path / "memory.sqlite3") as store:
        sid = store.new_session(title="Tokyo trip")
        store.set_summary(sid, "Booked a 東京 hotel near the station for the conference")
        other = store.new_session()
        store.set_summary(other, "Unrelated chat about gardening")
        (hit,) = store.search_sessions("conference hotel")
        assert hit.session_id == sid and hit.title == "Tokyo trip"
        assert "\x02hotel\x03" in hit.snippet and "\x02conference\x03" in hit.snippet
        assert [h.session_id for h in store.search_sessions("東京")] == [sid]
        assert [h.session_id for h in store.search_sessions("tokyo")] == [sid]  # the title too
        store.set_summary(sid, "Changed plans")
        assert store.search_sessions("conference") == []
        store.delete_session(sid)
        assert store.search_sessions("changed plans") == []
        assert store.search_sessions("") == [] and store.search_sessions('"(') == []
