"""Recall of one past session among thousands, asked about in other words than it used.

    python bench/memory_recall.py [--sessions 3000] [--seed 11]

Builds a throw-away memory of N sessions: varied synthetic ones (work on software, data,
documents, home, travel, money, health; each a summary and a short conversation) and, at random
places among them, the hand-written sessions of ``REMEMBERED`` below. Each of those comes with
the question a user asks weeks later, paraphrased: it shares at most a word or two with the
session and says the rest differently ("the upload check that failed now and then on the build
server" for "the flaky upload test ... in CI"). For each question it ranks sessions as
``MemoryStore.recall`` lists them (matching summaries first, then the sessions of the matching
messages) and prints recall@5 (the target is >= 0.9), the misses, and recall's latency
(wall clock and this thread's CPU time). Never fails.
"""

from __future__ import annotations

import argparse
import random
import statistics
import tempfile
import time
from pathlib import Path

import _common
from _common import summary_ms

from hermes_tui.memory.store import MemoryStore
from hermes_tui.memory.text import STOP_WORDS, WORD

# (summary, what the user said, what the assistant answered, the question asked weeks later)
REMEMBERED = [
    ("Fixed the flaky upload test by retrying the S3 mock when it times out in CI.",
     "the upload test fails one run in ten on CI", "I'll make the S3 mock retry after a timeout.",
     "what did we do about the upload check that failed now and then on the build server"),
    ("Moved the nightly Postgres backup to a cron job that writes to the NAS.",
     "backups should land on the NAS every night", "A cron entry now dumps the database at 02:00.",
     "where do the database dumps end up every night these days"),
    ("Renewed the Let's Encrypt certificate and added a systemd timer for renewal.",
     "the certificate for the site expired", "Certbot renewed it; a timer renews it from now on.",
     "how is the TLS cert kept from lapsing again"),
    ("Tracked a memory leak in the image resizer to an unbounded LRU cache.",
     "the resizer process keeps growing", "The cache has no size limit, so RAM grows forever.",
     "why did the thumbnail service keep eating RAM"),
    ("Set up Grafana alerts for disk usage above 85 percent on the database hosts.",
     "we ran out of disk on db2 last week", "Alerts fire at 85 percent full on every db host.",
     "when do we get warned that storage on the db servers is filling up"),
    ("Rewrote the invoice PDF template with WeasyPrint and fixed the VAT rounding.",
     "invoices show the wrong VAT total", "The tax was rounded per line instead of per invoice.",
     "the bills had the sales tax off by a cent, what was wrong"),
    ("Configured nginx rate limiting for the login endpoint after a brute-force attempt.",
     "someone is hammering /login", "limit_req now allows 5 requests a minute per IP.",
     "how did we throttle the password guessing on the sign-in page"),
    ("Migrated the React app from webpack to Vite; build time fell from 90 s to 12 s.",
     "the frontend build takes forever", "Switching the bundler to Vite cut it to 12 seconds.",
     "which bundler did we switch the web UI to, to make compiling faster"),
    ("Debugged the Redis queue stalling: workers never acked jobs after a timeout.",
     "jobs stay in the queue forever", "Workers drop the ack when a job times out.",
     "background tasks got stuck and never finished, what was the cause"),
    ("Planned the Kyoto trip: ryokan booked for three nights, JR pass ordered.",
     "help me plan two weeks in Japan", "Three nights at a ryokan in Kyoto, then Osaka.",
     "where are we staying on the Japan holiday"),
    ("Wrote a Rust CLI that dedupes photos by perceptual hash.",
     "I have thousands of duplicate photos", "The tool hashes each picture and groups near-copies.",
     "the program that finds repeated pictures in my library, how does it compare them"),
    ("Tuned the Postgres autovacuum settings for the events table bloat.",
     "the events table is 40 GB but has few rows", "Autovacuum runs more often on that table now.",
     "the huge events table that was mostly empty space, what settings did we change"),
    ("Resolved the merge conflict in the payments branch by keeping the new refund flow.",
     "git says conflict in payments/refund.py", "Kept the new refund code and dropped the old one.",
     "which side did we keep when the refund code clashed during the merge"),
    ("Added structured JSON logging with request ids to the Flask API.",
     "logs are impossible to correlate", "Every log line now carries the request id as JSON.",
     "how can I trace one API call across the log lines"),
    ("Investigated DNS failures in Kubernetes: ndots 5 caused slow external lookups.",
     "pods take seconds to resolve api.stripe.com", "ndots:5 makes each lookup try the search domains first.",
     "why were the containers in the cluster slow to reach outside hostnames"),
    ("Set up the sourdough starter schedule: feed at 8 and 20, bake on Saturdays.",
     "my sourdough starter smells like acetone", "It is hungry: feed it twice a day.",
     "how often should I feed the bread culture"),
    ("Upgraded the Django project from 3.2 to 4.2 and replaced the removed url() calls.",
     "django upgrade broke our urls", "url() is gone in 4.x; re_path replaces it.",
     "what broke in the routing when we moved to the newer Django"),
    ("Built a cron report that emails weekly churn numbers to the sales team.",
     "sales wants churn every monday", "A Monday job mails the cancellations summary to sales.",
     "the automatic Monday mail about lost customers, how is it sent"),
    ("Diagnosed the slow CSV export: an N+1 query per row; fixed with one join.",
     "exporting users to CSV takes minutes", "Each row ran its own query; one join fixes it.",
     "why did downloading the user list as a spreadsheet take so long"),
    ("Configured a WireGuard VPN between the office and the Hetzner servers.",
     "we need the office to reach the servers privately", "A WireGuard tunnel links the office to Hetzner.",
     "how does the office network reach our rented machines privately"),
    ("Chose a standing desk: the 160 cm frame with dual motors, under 600 euros.",
     "I need a new desk, my back hurts", "The dual-motor frame is steadier at full height.",
     "which sit-stand table did I end up picking"),
    ("Drafted the grant budget: two postdocs, one GPU server, travel to two conferences.",
     "help me with the money part of the proposal", "Personnel is most of it; the GPU server is 18k.",
     "what did we put in the funding application's costs"),
    ("Fixed the Bluetooth headphones dropping on Ubuntu by disabling the ERTM setting.",
     "my headset disconnects every few minutes on linux", "Turning off ERTM keeps the link stable.",
     "the wireless earbuds kept cutting out on my laptop, what setting fixed it"),
    ("Set up a monthly budget spreadsheet: rent, groceries and savings with a 20 percent goal.",
     "I want to save more each month", "A sheet with categories and a savings target of 20 percent.",
     "how much of my income did we plan to put aside"),
    ("Translated the onboarding emails into German and fixed the formal Sie forms.",
     "our German customers find the welcome mails odd", "They mixed du and Sie; now all formal.",
     "the welcome messages for customers in Germany, what was off about the tone"),
    ("Replaced the failing water heater thermostat; the part was a Honeywell 46-something.",
     "no hot water since yesterday", "The thermostat is dead; a replacement costs 40 euros.",
     "the boiler part we swapped when the showers went cold"),
    ("Cut the Docker image from 1.2 GB to 180 MB with a multi-stage build on Alpine.",
     "our container image is huge", "Build in one stage, copy only the binary into Alpine.",
     "how did we shrink the container that was over a gigabyte"),
    ("Analysed the A/B test on the pricing page: variant B lifted signups 4 percent, p = 0.03.",
     "did the new pricing page win?", "B converts 4 percent better and the result is significant.",
     "the experiment on the plans page, which version won and by how much"),
    ("Set up Renovate to group minor dependency updates into one weekly pull request.",
     "too many dependabot PRs", "Renovate batches minor bumps into a weekly PR.",
     "how do we stop drowning in library upgrade PRs"),
    ("Planned the vegetable garden: tomatoes by the south wall, beans on the trellis, compost bin moved.",
     "help me lay out the garden beds", "Tomatoes want the south wall; beans can climb the trellis.",
     "where did we decide to put the tomato plants"),
    ("Fixed the timezone bug in the booking app: times were stored as local time, now UTC.",
     "appointments show an hour off after the clock change", "Stored local times shift at DST; UTC does not.",
     "why were reservations off by sixty minutes after daylight saving"),
    ("Wrote the eulogy for grandpa Walter: his years as a carpenter and the cabin he built.",
     "I need to speak at my grandfather's funeral", "We can start with the cabin he built by hand.",
     "the speech I gave for my granddad, what did we open with"),
    ("Benchmarked SQLite against Postgres for the analytics job: SQLite won below 10 GB.",
     "which database for the reports job?", "Under 10 GB SQLite is faster and simpler to run.",
     "for the reporting workload, which engine came out faster on small data"),
    ("Configured the Raspberry Pi to run Pi-hole with DNS over HTTPS through cloudflared.",
     "I want to block ads for the whole house", "Pi-hole on the Pi, upstream via cloudflared.",
     "the little board that blocks adverts on our home network, how is it set up"),
    ("Prepared the quarterly tax estimate: 4,200 euros due on the 10th, paid from the business account.",
     "how much do I owe this quarter", "About 4,200, due on the 10th.",
     "how much was the advance payment to the tax office this time"),
    ("Debugged the flaky Playwright test: it clicked before the modal finished animating.",
     "the e2e test fails randomly on the dialog", "It clicks during the animation; wait for it to settle.",
     "the browser test that clicked the popup too early, what was the fix"),
    ("Set up a family shared calendar and a chore rota for the kids.",
     "the kids never know whose turn it is to do the dishes", "A rota in the shared calendar, rotating weekly.",
     "who does the washing up this week according to our schedule"),
    ("Fine-tuned a small BERT model to route support tickets; 91 percent accuracy.",
     "can we sort support requests automatically", "A fine-tuned classifier gets 91 percent right.",
     "the model that sorts customer help requests, how accurate was it"),
    ("Negotiated the car lease return: the scratches were waived, 120 euros for the tyres.",
     "the dealer wants 900 euros for wear", "Photos of the delivery state got the scratches waived.",
     "what did I end up paying when I gave the leased car back"),
    ("Replaced cron with systemd timers on the build box and added failure emails.",
     "cron jobs fail silently", "Timers log to the journal and mail on failure.",
     "how do we hear about it now when a scheduled job on the build machine breaks"),
]

DOMAINS = {
    "software": ("service api endpoint deploy pipeline cache queue worker database schema migration test build "
                 "branch release container cluster proxy certificate logging metrics alert timeout retry index "
                 "frontend backend library dependency config secret token session webhook parser compiler"),
    "data": ("dataset csv dashboard report chart model training accuracy feature pipeline notebook query "
             "warehouse table column outlier regression forecast sample survey metric cohort experiment"),
    "documents": ("letter essay slides presentation memo proposal contract resume cover translation summary "
                  "outline chapter draft newsletter article review agenda minutes template invoice"),
    "home": ("kitchen garden heating boiler roof window paint furniture shelf lamp router printer laundry "
             "fridge oven plumbing insulation bicycle car tyres lease insurance mortgage"),
    "travel": ("flight hotel train itinerary visa passport luggage museum hike beach restaurant booking "
               "rental ferry airport schedule tickets city tour weekend"),
    "money": ("budget savings pension taxes invoice salary expenses subscription refund bank loan "
              "investment shares rent bills receipts accounting"),
    "health": ("running training diet sleep doctor appointment vitamins stretching yoga marathon recipe "
               "meal allergy dentist physio knee back posture"),
}
VERBS = ("fixed", "set", "planned", "debugged", "reviewed", "wrote", "compared", "tuned", "replaced", "migrated",
         "cleaned", "organised", "drafted", "checked", "measured", "automated", "configured", "sorted",
         "simplified", "rewrote")
PROBLEMS = ("was too slow", "kept failing", "needed a rewrite", "was missing", "cost too much", "was confusing",
            "broke after the update", "needed a second opinion", "had duplicates", "was out of date")


def synthetic(rng: random.Random) -> tuple[str, str, str]:
    """A plausible session: (summary, what the user said, what the assistant answered)."""
    words = DOMAINS[rng.choice(list(DOMAINS))].split()
    a, b, c, d = rng.sample(words, 4)
    summary = (f"{rng.choice(VERBS).capitalize()} the {a} {b} that {rng.choice(PROBLEMS)}; "
               f"{rng.choice(VERBS)} the {c} and the {d}.")
    user = f"can you help with the {a} {b}? it {rng.choice(PROBLEMS)}"
    answer = f"Let's look at the {a} first, then the {c} and the {d}."
    return summary, user, answer


def ranked_sessions(store: MemoryStore, question: str) -> list[int]:
    """Sessions in the order recall() lists them (summaries first, then messages' sessions)."""
    order: list[int] = []
    for hit in store.recall(question, limit=20):
        if hit.session_id not in order:
            order.append(hit.session_id)
    return order


def shares_a_word(store: MemoryStore, question: str, session_id: int) -> bool:
    """Whether any word of ``question`` (stemmed as the index does) is in the session's summary or
    messages: a question that shares none can only be found by meaning, which no lexical index has."""
    for word in {w for w in WORD.findall(question.lower()) if w not in STOP_WORDS}:
        if store.search(f'"{word}"', limit=1, session_id=session_id):
            return True
        if session_id in {s.session_id for s in store.search_sessions(f'"{word}"', limit=10_000)}:
            return True
    return False


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sessions", type=int, default=3000)
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory() as tmp, MemoryStore(Path(tmp) / "memory.sqlite3") as store:
        slots = dict(zip(rng.sample(range(args.sessions), len(REMEMBERED)), REMEMBERED, strict=True))
        targets: dict[str, int] = {}
        start = time.perf_counter()
        for i in range(args.sessions):
            summary, user, answer = synthetic(rng) if i not in slots else slots[i][:3]
            sid = store.new_session()
            store.bulk_add_messages(sid, [{"role": "user", "content": user},
                                          {"role": "assistant", "content": answer}])
            store.set_summary(sid, summary)
            if i in slots:
                targets[slots[i][3]] = sid
        print(f"{args.sessions:,} sessions built in {time.perf_counter() - start:.1f} s; "
              f"{len(targets)} paraphrased questions")
        found, wall, cpu, misses = 0, [], [], []
        reachable = {question for question, sid in targets.items() if shares_a_word(store, question, sid)}
        found_reachable = 0
        for question, sid in targets.items():
            start, start_cpu = time.perf_counter(), time.thread_time()
            order = ranked_sessions(store, question)
            wall.append(time.perf_counter() - start)
            cpu.append(time.thread_time() - start_cpu)
            hit = sid in order[:5]
            found += hit
            found_reachable += hit and question in reachable
            if not hit:
                shared = "" if question in reachable else ", no word in common"
                misses.append(f"  miss (rank {order.index(sid) + 1 if sid in order else '-'}{shared}): {question}")
        print(f"recall@5 {found / len(targets):.2f} ({found}/{len(targets)}); on the {len(reachable)} questions that "
              f"share a searchable word with their session: {found_reachable / max(len(reachable), 1):.2f}")
        print("\n".join(misses))
        print(f"recall   {summary_ms(wall)}")
        print(f"  (CPU)  {summary_ms(cpu)}")
        print(f"mean sessions listed per question: {statistics.mean(len(ranked_sessions(store, q)) for q in targets):.1f}")


if __name__ == "__main__":
    assert _common  # sys.path + env
    main()
