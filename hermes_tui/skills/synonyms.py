"""How people ask for a task, next to the words skills describe it with: the router's one
hand-curated table of paraphrases (used by ``index.py`` to widen a request before ranking).

A request says "deck", the skill says "presentation" and "pptx"; a request says "to-do list",
the skill says "reminders". bm25 cannot bridge that, so each line below names words or phrases
a request may use (left of ``>``) and the words a skill would use for the same thing (right).
A line without ``>`` is a set of interchangeable words, each widening to the others. Entries
are everyday task vocabulary (file formats, kinds of documents, common verbs of software work,
media, finance, research), not the names of particular skills, so the table serves any library.
Words are matched after lowercasing; a key's plural ("decks") finds it too.
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


def _key(word: str) -> str:
    """A word as the table is looked up by: lowercased, a plural's s dropped."""
    word = word.lower()
    return word[:-1] if len(word) > 3 and word.endswith("s") and not word.endswith("ss") else word


@cache
def table() -> dict[tuple[str, ...], tuple[str, ...]]:
    """(key words) -> the words a skill would use for them."""
    found: dict[tuple[str, ...], list[str]] = {}
    for line in TABLE.strip().splitlines():
        left, _, right = line.partition(">")
        keys = [k.strip() for k in left.split(",") if k.strip()]
        targets = WORD.findall(right.lower()) if right else [w for k in keys for w in WORD.findall(k.lower())]
        for key in keys:
            words = tuple(_key(w) for w in WORD.findall(key.lower()))
            found.setdefault(words, [])
            found[words] += [t for t in targets if t not in found[words]]
    return {k: tuple(v) for k, v in found.items()}


@cache
def _longest() -> int:
    return max(len(k) for k in table())


def expansions(words: list[str]) -> list[str]:
    """The words a skill might use for what ``words`` (a request's words in order, stop words
    kept, lowercased) ask for, not already among them; longer phrases are matched first."""
    keys = [_key(w) for w in words]
    seen = set(words)
    extra: list[str] = []
    i = 0
    while i < len(keys):
        for size in range(min(_longest(), len(keys) - i), 0, -1):
            targets = table().get(tuple(keys[i:i + size]))
            if targets is not None:
                extra += [t for t in targets if t not in seen]
                seen.update(targets)
                i += size
                break
        else:
            i += 1
    return extra
