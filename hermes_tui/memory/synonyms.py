"""How people ask for a thing, next to the words it was written down with: the one hand-curated
table of everyday paraphrases, used by the skill router (``skills/index.py``) and by memory recall
(``memory/recall.py``) to widen a question before ranking.

A request says "deck", the skill says "presentation" and "pptx"; a question says "the build
server", the session said "CI". bm25 cannot bridge that, so each line below names words or
phrases a question may use (left of ``>``) and the words the thing is likely written with
(right). A line without ``>`` is a set of interchangeable words, each widening to the others.
Entries are everyday vocabulary (file formats, kinds of documents, common verbs of software work,
media, finance, home, travel), never the names of particular skills or sessions, so the table
serves any library and any memory. Words are matched after lowercasing; a key's plural ("decks")
finds it too.

``TABLE`` serves both; ``EVERYDAY`` only memory recall: its associations are looser (a dump is
not always a backup), which costs a recall at most one line among five, but a skill hint the
model's attention, and the router's hint precision is measured on ``TABLE`` alone
(bench/router_recall.py).
"""

from __future__ import annotations

from functools import cache

from hermes_tui.memory.text import WORD

TABLE = """
spreadsheet, spreadsheets, workbook, excel, xlsx, xls > spreadsheet excel xlsx
csv > spreadsheet
slides, slide, deck, powerpoint, pptx, keynote, presentation > presentation slides pptx powerpoint
word document, word doc, word file, docx, ms word > docx word document
pdf, pdfs > pdf
scanned, scan, photographed > ocr scan
markdown, md > markdown
diagram, flowchart, flow chart > diagram
chart, graph, plot, figure, visualize, visualise > plot chart visualization figure
image, picture, photo, photograph, pic, screenshot > image photo
video, clip, footage, movie > video
audio, recording, podcast, voice memo, mp3, wav > audio speech
transcribe, transcript, transcription, dictation, captions > transcription speech-to-text
gif, gifs > gif animated
email, e-mail, mail, inbox > email mail
text message, sms, imessage > message sms imessage
chat, messenger > chat message
meeting, call, standup > meeting
calendar, schedule, appointment, book time, invite > calendar event schedule
reminder, reminders, remind, to do, todo, to-do, task list > reminder reminders task todo
note, notes, notebook, vault, journal > note notes
newsletter, announcement, status update, memo > communication announcement update
release notes, changelog, what changed > changelog release notes
deploy, ship, hosted, host, hosting, publish, go live, live link, production > deploy deployment hosting
bug, crash, crashes, broken, failing, fails, flaky, intermittent, error > debug bug error failure
debug, debugger, breakpoint, step through > debug debugger
test, tests, testing, unit test > test
review, feedback, comments, reviewer > review
pull request, pr, merge request > pull request pr
repo, repository, codebase > repository codebase
branch, branches > branch git
commits, commit, git history > commit git
container, containers, containerize, docker > container docker
plan, roadmap, outline, break down, breakdown, spec, requirements > plan implementation
ideas, brainstorm, options, explore, think through > brainstorm ideas ideation
lint, linter, linting, formatter > lint
dependencies, dependency, packages, deps > dependency package
secret, secrets, password, passwords, credential, credentials, api key, token > secret password credential
vulnerability, vulnerabilities, exploit, attacker, security hole > security vulnerability
malware, virus, malicious, antivirus, ransomware > malware virus security
fuzz, fuzzing, fuzzer > fuzz fuzzing
website, site, web page, webpage, landing page > website web page
ui, interface, frontend, front-end, dashboard > ui interface frontend design
font, fonts, typeface, typography > typography font
color, colors, colour, colours, palette > color palette
bland, generic, ugly, boring > design aesthetic
forecast, predict, projection, prediction > forecast forecasting time series
significance, significant, p-value, t-test, anova, statistical > statistical test statistics
dataframe, dataframes, pandas > dataframe
paper, papers, preprint, preprints, article, publication, studies, study > paper papers research literature
citation, citations, references, bibliography, bibtex > citation reference bibliography
molecule, molecules, compound, compounds, smiles > molecule chemistry
stock, stocks, share price, ticker, shares, trading > stock quote market
crypto, bitcoin, ethereum, token price > crypto
odds, bet, betting, bettors, wager > prediction market odds
invoice, invoices, bill, bills, receipt, receipts > invoice receipt
valuation, intrinsic value, value company > valuation
budget, expenses, accounting, bookkeeping > accounting finance expenses
resume, cv > resume
job posting, job ad, job description > job description
domain, domains, website name > domain name
lights, lamp, bulbs > lights
mac, macbook, macos, osx > macos apple
song, songs, music, lyrics > music song
web search, search the web, google it, look up online > web search
translate, translation > translation
remove background, cut out > background removal remove
folder, folders, directory, downloads, desktop > folder files organize
tidy, clean up, cleanup, organize, organise, sort > organize clean cleanup
summarize, summarise, summary, key points, tldr > summary summarize
serve, serving, inference > inference serving
fine-tune, finetune, fine tune, training > fine-tuning training
sign in, sign-in, signin, log in, login > login authentication auth
docs, documentation, readme > documentation docs
ticket, tickets, issue, issues > issue ticket
notify, notification, ping me > notification alert
scrape, scraping, crawl, crawler > scraping scrape crawl
db, sql > database sql
k8s, kubernetes > kubernetes
llm, language model, chatbot > llm model
directions, route, drive to > maps route directions
weather forecast > weather
short link, shorten link, url shortener > url shortener
tweet, tweets > twitter tweet
checkout, pay, payment, payments > payment
leads, crm, sales pipeline > crm leads
hiring, recruiting, candidates, applicants > recruiting hiring
survey, questionnaire, form > form survey
timesheet, time tracking, hours worked > time tracking
"""


EVERYDAY = """
build server, build machine, build box, build bot, ci server, continuous integration > ci build pipeline
check, checks, checking > test tests
now and then, once in a while, sometimes, randomly, at random, on and off > flaky intermittent
dump, dumps, copies, copy, snapshot, snapshots > backup backups snapshot
backup, backups, back up > backup dump snapshot
cert, certs, tls, ssl, https > certificate tls ssl
lapse, lapsing, lapsed, expire, expires, expiring, expired, expiry, run out > expire expired renew renewal
ram > memory ram
leak, leaking, eating, growing, bloated > leak memory
storage, disk space, drive, drives > disk storage
filling up, full, out of space > disk full usage
warned, warn, warning, notified, heads-up > alert alerts warning notification
alert, alerts, alarm > alert notification
sales tax, tax, taxes, vat, gst > tax vat
tax office, taxman, irs, revenue service > tax taxes
advance payment, prepayment, installment, instalment > estimate quarterly payment due
owe, owed, due, pay, paid, paying > payment due cost paid
throttle, throttled, throttling, rate limit, rate limiting > rate limit limiting
password guessing, brute force, brute-force, credential stuffing, hammering > brute force login attack
bundler, bundling, compile, compiling, compiled, compilation > build bundler webpack vite
background task, background tasks, background job, background jobs, jobs, job > job queue worker task
stuck, hang, hangs, hung, stall, stalled, stalling, frozen, freeze > stuck stalled hang timeout
holiday, holidays, vacation, trip, journey > trip travel vacation holiday
stay, staying, stayed, accommodation, lodging, place to sleep > hotel booked booking accommodation
repeated, duplicate, duplicates, copies, near-copies > duplicate duplicates dedupe
compare, comparing, compares > hash compare match
empty space, wasted space, bloat, bloated > bloat vacuum
clash, clashed, clashing, collide > conflict merge
trace, tracing, correlate, follow > trace request id logging
log line, log lines, logs > logging log logs
outside, external, internet > external
hostname, hostnames, domain lookup, name resolution, resolve > dns lookup resolve
container, containers > container docker pod image
cluster, clusters > kubernetes cluster k8s
bread, loaf, baking, bake > bread bake sourdough dough
routing, routes, urls, links > url urls route routing
lost customers, cancellations, cancelled customers, leaving customers, attrition > churn cancellations
spreadsheet, spreadsheets, sheet, sheets > csv excel spreadsheet
downloading, download, export, exporting > export download csv
rented machines, rented servers, vps, cloud servers, machines > server servers hosting
privately, private network, tunnel, remote access > vpn tunnel wireguard
office network > office vpn network
desk, sit-stand, standing, table > desk
funding, grant, grants, funding application, proposal > grant proposal funding budget
costs, cost, money part, spending, expenses, price > budget cost costs price
earbuds, headphones, headset, earphones, airpods > headphones headset bluetooth audio
wireless > bluetooth wifi wireless
cutting out, cut out, dropping, drops, disconnects, disconnecting, dropping out > disconnect disconnects drop dropping
put aside, set aside, save, saving, savings, nest egg > savings save
income, salary, wage, wages, paycheck, earnings > income salary
tone, formal, informal, polite, politeness > formal tone
welcome, onboarding, first emails > onboarding welcome
boiler, water heater, hot water, heater > boiler heater thermostat hot water
shower, showers > hot water boiler
shrink, shrank, smaller, slimmer, lighter, trim, slim down, size > size smaller reduce compress shrink
gigabyte, gigabytes, gb, megabyte, megabytes, mb > size gb mb
experiment, experiments, a/b test, ab test, split test, variant > experiment test variant
plans page, pricing, price page > pricing plans
library upgrade, library upgrades, dependency update, dependency updates, bumps, version bumps > dependency update dependencies upgrade
drowning, too many, flood > too many
plants, vegetables, veggies, beds, flower bed > garden plants beds
reservation, reservations, appointment, appointments, booking, bookings > booking appointment reservation
daylight saving, dst, clock change, summer time, time zone, timezone > timezone dst utc time zone
speech, eulogy, funeral, toast, remarks > speech eulogy
granddad, grandad, grandpa, grandfather > grandfather grandpa
grandma, granny, grandmother, nan > grandmother grandma
database, databases, engine, database engine, db engine > database postgres postgresql mysql sqlite
workload, reporting, analytics > analytics report reports
adverts, advertising, ads, adverts > ads advertising adblock
little board, single-board computer, raspberry, pi > raspberry pi
home network, house network, wifi, wi-fi, lan > network wifi router home
browser test, browser tests, e2e, end-to-end, ui test, ui tests > e2e test playwright selenium browser
popup, pop-up, dialog, modal, overlay > modal dialog popup
washing up, dishes, dishwasher > dishes chores
housework, chores, cleaning rota > chores rota
rota, roster, turns, whose turn > rota schedule
schedule, scheduled, timetable > schedule calendar cron timer
scheduled job, scheduled jobs, cron job, cron jobs, timer, timers > cron timer systemd scheduled job
classifier, classify, categorise, categorize, triage, sort automatically > classifier classification route
help request, help requests, support request, support requests, customer help > support ticket tickets
accuracy, accurate, how good, precision > accuracy percent
car, vehicle, auto > car
leased, lease, leasing, rental, renting, rent > lease rental rent
give back, gave back, giving back, hand back, handed back, return > return returned
broke, breaks, broken, failing, failed > failure fail error
"""

def _key(word: str) -> str:
    """A word as the table is looked up by: lowercased, a plural's s dropped."""
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


@cache
def table() -> dict[tuple[str, ...], tuple[str, ...]]:
    """(key words) -> the words a skill would use for them."""
    return _parse(TABLE)


@cache
def everyday_table() -> dict[tuple[str, ...], tuple[str, ...]]:
    """``TABLE`` and ``EVERYDAY`` together: what memory recall widens a question with."""
    return _parse(TABLE + EVERYDAY)


def _parse(text: str) -> dict[tuple[str, ...], tuple[str, ...]]:
    found: dict[tuple[str, ...], list[str]] = {}
    for line in text.strip().splitlines():
        left, _, right = line.partition(">")
        keys = [k.strip() for k in left.split(",") if k.strip()]
        targets = WORD.findall(right.lower()) if right else [w for k in keys for w in WORD.findall(k.lower())]
        for key in keys:
            words = tuple(_key(w) for w in WORD.findall(key.lower()))
            found.setdefault(words, [])
            found[words] += [t for t in targets if t not in found[words]]
    return {k: tuple(v) for k, v in found.items()}


def expansions(words: list[str]) -> list[str]:
    """The words a skill might use for what ``words`` (a request's words in order, stop words
    kept, lowercased) ask for, not already among them; longer phrases are matched first."""
    return _expand(words, table())


def everyday_expansions(words: list[str]) -> list[str]:
    """As ``expansions``, with the looser everyday associations of ``EVERYDAY`` too (memory)."""
    return _expand(words, everyday_table())


def _expand(words: list[str], found: dict[tuple[str, ...], tuple[str, ...]]) -> list[str]:
    longest = max(len(k) for k in found)
    keys = [_key(w) for w in words]
    seen = set(words)
    extra: list[str] = []
    i = 0
    while i < len(keys):
        for size in range(min(longest, len(keys) - i), 0, -1):
            targets = found.get(tuple(keys[i:i + size]))
            if targets is not None:
                extra += [t for t in targets if t not in seen]
                seen.update(targets)
                i += size
                break
        else:
            i += 1
    return extra
