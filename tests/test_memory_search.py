"""Search quality: any language, clean text, query syntax, bounded snippets, schema upgrade."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from hermes_tui.memory.query import parse
from hermes_tui.memory.search import SearchHit
from hermes_tui.memory.store import HIT_END, HIT_START, MemoryStore
from hermes_tui.memory.text import INDEX_HEAD, index_text
from tests.memory_harness import write_version_1_store  # fixtures among them

FILLER = [f"filler note {i}: weather report, lunch plans and a shopping list item {i}" for i in range(30)]


@pytest.fixture
def store(tmp_path: Path):
    with MemoryStore(tmp_path / "memory.sqlite3") as s:
        yield s


def ids(hits: list[SearchHit]) -> list[int]:
    return [h.message_id for h in hits]


def add(store: MemoryStore, texts: list[str], role: str = "user") -> list[int]:
    sid = store.new_session()
    return [store.add_message(sid, role, t) for t in texts]


# --------------------------------------------------------------------------- any language

# (sentence, a word of two or more characters inside it, written without spaces)
CJK_SET = [
    ("東京タワーに行きました", "東京"),
    ("部署到生产服务器", "服务器"),
    ("今日の天気は晴れです", "天気"),
    ("数据库连接超时了", "数据库"),
    ("明日は大阪で会議があります", "大阪"),
    ("请帮我检查一下日志文件", "日志"),
    ("新しいブランチを作成してください", "ブランチ"),
    ("这个函数返回一个列表", "函数"),
    ("パスワードを忘れてしまいました", "パスワード"),
    ("我们需要升级操作系统", "操作系统"),
    ("テストが全部通りました", "テスト"),
    ("缓存命中率太低", "缓存"),
    ("京都の紅葉がきれいでした", "紅葉"),
    ("内存泄漏导致进程崩溃", "内存泄漏"),
    ("設定ファイルを読み込めません", "設定"),
    ("把代码推送到远程仓库", "仓库"),
    ("週末に富士山に登りました", "富士山"),
    ("网络延迟非常高", "延迟"),
    ("バックアップは毎晩実行されます", "バックアップ"),
    ("用户界面需要重新设计", "界面"),
    ("北海道でスキーをしました", "北海道"),
    ("编译器报了一个警告", "编译器"),
    ("コンテナのメモリが不足しています", "メモリ"),
    ("请把文档翻译成英文", "翻译"),
    ("先週の金曜日に引っ越しました", "金曜日"),
    ("证书明天就要过期了", "证书"),
    ("このライブラリは非推奨です", "ライブラリ"),
    ("上海的天气很潮湿", "上海"),
    ("エラーメッセージが表示されます", "エラー"),
    ("定时任务每小时运行一次", "定时任务"),
    ("新幹線で名古屋まで行きます", "名古屋"),
    ("防火墙拦截了这个端口", "端口"),
    ("서울에서 회의가 있었습니다", "서울"),
    ("데이터베이스 백업을 확인하세요", "백업"),
]


def test_cjk_words_are_found_inside_unspaced_text(store: MemoryStore) -> None:
    add(store, FILLER)
    written = dict(zip(add(store, [s for s, _ in CJK_SET]), CJK_SET, strict=True))

    found = 0
    for message_id, (_sentence, word) in written.items():
        hits = store.search(word)
        if message_id in ids(hits):
            found += 1
            hit = next(h for h in hits if h.message_id == message_id)
            assert f"{HIT_START}{word}{HIT_END}" in hit.snippet, (word, hit.snippet)
        # nothing else contains the word, so no other sentence may come back
        assert all(word in written[i][0] for i in ids(hits) if i in written), word
    recall = found / len(CJK_SET)
    print(f"\nCJK recall: {found}/{len(CJK_SET)} = {recall:.0%}")
    assert recall == 1.0


def test_cjk_pairs_do_not_match_across_words(store: MemoryStore) -> None:
    tokyo, kyoto = add(store, ["東京タワー", "京都タワー"])
    assert ids(store.search("東京")) == [tokyo]
    assert ids(store.search("京都")) == [kyoto]
    assert set(ids(store.search("タワー"))) == {tokyo, kyoto}
    assert ids(store.search("京タワ")) == [tokyo]  # three characters: a phrase of two pairs
    assert store.search("都京") == []
    assert set(ids(store.search("京"))) == {tokyo, kyoto}  # one character: pairs starting with it


def test_mixed_scripts_korean_and_accented_latin(store: MemoryStore) -> None:
    mixed, korean, accents, plain = add(store, [
        "deploy到生产服务器 with docker",
        "서울 날씨가 좋네요",
        "Le café était fermé à Montréal",
        "plain english text about servers",
    ])
    assert ids(store.search("服务器 docker")) == [mixed]
    assert ids(store.search("deploy 生产")) == [mixed]
    assert ids(store.search("날씨가")) == [korean]
    assert ids(store.search("서울")) == [korean]
    assert ids(store.search("café")) == [accents]
    assert ids(store.search("Montréal")) == [accents]
    assert ids(store.search("cafe")) == [accents]  # unicode61 folds diacritics
    assert ids(store.search("servers")) == [plain]


def test_has_word_stands_in_for_the_index() -> None:
    from hermes_tui.memory.text import has_word

    assert has_word("The cat", "the") and has_word("x_the_y", "the") and has_word("a cat", "a")
    assert not has_word("other theme", "the") and not has_word("and", "a")
    assert has_word("reports due", "report") and has_word("reporting", "report")
    assert not has_word("transport", "report")


def test_latin_text_is_indexed_unchanged() -> None:
    text = "Plain English, with punctuation: 42 files (and more)!"
    assert index_text(text) == text


# --------------------------------------------------------------------------- clean text


def test_terminal_escapes_and_control_characters_are_not_indexed(store: MemoryStore) -> None:
    add(store, FILLER)
    coloured = "\x1b[31mRED\x1b[0m build \x1b[1;32mPASSED\x1b[0m in \x1b]0;title\x07 12s\r\n"
    (mid,) = add(store, [coloured], role="tool")
    assert ids(store.search("RED")) == [mid]
    assert ids(store.search("passed")) == [mid]
    assert store.search("31mRED") == [] and store.search("0m") == []
    (hit,) = store.search("red")
    assert "\x1b" not in hit.snippet and "\r" not in hit.snippet
    assert hit.snippet == f"{HIT_START}RED{HIT_END} build PASSED in 12s"
    assert store.get_messages(hit.session_id)[0].content == coloured  # stored verbatim


def test_index_text_removes_escapes() -> None:
    assert index_text("\x1b[38;5;196mhot\x1b[m\x00\x07bell\x9b31mx") == "hot  bellx"


# --------------------------------------------------------------------------- query syntax


def test_exact_phrase(store: MemoryStore) -> None:
    exact, shuffled = add(store, ["the build failed on main", "main build, it failed"])
    assert set(ids(store.search("build failed"))) == {exact, shuffled}
    assert ids(store.search('"build failed"')) == [exact]
    assert ids(store.search('"failed on main" build')) == [exact]


def test_prefix(store: MemoryStore) -> None:
    deployment, deployed, _other = add(store, ["deployment done", "we deployed it", "nothing here"])
    assert set(ids(store.search("deploy*"))) == {deployment, deployed}
    assert store.search("dep*") != []  # three letters: a prefix
    assert ids(store.search("de*")) == []  # two letters: only the word "de"


def test_or_and_exclusion(store: MemoryStore) -> None:
    docker, podman, both, neither = add(store, [
        "docker compose up", "podman run", "docker and podman side by side", "kubectl apply"])
    assert set(ids(store.search("docker OR podman"))) == {docker, podman, both}
    assert set(ids(store.search("docker -podman"))) == {docker}
    assert set(ids(store.search('docker -"side by side"'))) == {docker}
    assert set(ids(store.search("docker OR kubectl -compose"))) == {both, neither}
    assert store.search("OR") == [] and store.search("OR OR") == []
    assert set(ids(store.search("docker OR"))) == {docker, both}  # a dangling OR is dropped


def test_role_and_tool_filters(store: MemoryStore) -> None:
    sid = store.new_session()
    calls = [{"id": "c1", "type": "function", "function": {"name": "read_file", "arguments": "{}"}}]
    asked = store.add_message(sid, "user", "read the config please")
    call = store.add_message(sid, "assistant", "reading the config", tool_calls=calls)
    result = store.add_message(sid, "tool", "config: debug=true", tool_call_id="c1", name="read_file")
    bash = store.add_message(sid, "tool", "config written", tool_call_id="c2", name="run_bash")

    assert set(ids(store.search("config"))) == {asked, call, result, bash}
    assert ids(store.search("config role:user")) == [asked]
    assert set(ids(store.search("config role:tool"))) == {result, bash}
    assert set(ids(store.search("config tool:read_file"))) == {call, result}
    assert ids(store.search("config tool:read_file role:tool")) == [result]
    assert set(ids(store.search("tool:run_bash"))) == {bash}
    assert set(ids(store.search("config role:nobody"))) == set()  # "role" and "nobody" as words


def test_only_exclusions_search_for_the_words(store: MemoryStore) -> None:
    (mid,) = add(store, ["alpha release"])
    assert ids(store.search("-alpha")) == [mid]


SYNTAX = ['"', "-", "*", " OR ", "OR", "role:", "tool:", ":", "(", ")", "^", "+", "NEAR", "AND",
          "NOT", "{", "}", "\\", "'", "東京", "é", "\x00", "\x1b[31m", " ", " ", " "]
WORDS = ["alpha", "beta", "gamma", "user", "tool", "read_file", "assistant", "x"]


TARGET = "alpha beta gamma 東京 user tool read_file and or not near role é x"
TARGET_TOKENS = {t for w in index_text(TARGET).split() for t in w.lower().split("_")}


def test_generated_malformed_queries_never_raise(store: MemoryStore) -> None:
    """5,000 random mixes of syntax and words: each returns a list and never raises."""
    add(store, FILLER[:5])
    target = add(store, [TARGET])[0]
    rng = random.Random(12)
    for _ in range(5000):
        query = "".join(rng.choice(SYNTAX + WORDS) for _ in range(rng.randint(1, 12)))
        hits = store.search(query)
        assert isinstance(hits, list), query
        parsed = parse(query)
        if parsed.clauses and not (parsed.excluded or parsed.roles or parsed.tools):
            # the target holds every word the generator uses: without filters it must come back
            # (unless a quoted phrase put words out of the target's order)
            phrases = [p for c in parsed.clauses for p in c.phrases]
            known = all(len(p.tokens) == 1 and p.tokens[0] in TARGET_TOKENS for p in phrases)
            assert target in ids(hits) or not known, query


# --------------------------------------------------------------------------- big messages


def test_huge_messages_are_indexed_by_head_and_tail(store: MemoryStore) -> None:
    middle = " ".join(["filler"] * 200_000)
    text = "headword " + middle + " middleword " + middle + " tailword"
    (mid,) = add(store, [text], role="tool")
    assert len(text) > INDEX_HEAD * 4
    assert ids(store.search("headword")) == [mid]
    assert ids(store.search("tailword")) == [mid]
    assert store.search("middleword") == []  # the documented trade-off
    (hit,) = store.search("tailword")
    assert f"{HIT_START}tailword{HIT_END}" in hit.snippet and len(hit.snippet) < 200


def test_repeated_word_snippet_is_short_and_marked(store: MemoryStore) -> None:
    (mid,) = add(store, ["compile failed " * 10_000], role="tool")
    (hit,) = store.search("compile failed")
    assert hit.message_id == mid
    assert hit.snippet.count(HIT_START) == hit.snippet.count(HIT_END) > 2
    assert len(hit.snippet) < 200


# --------------------------------------------------------------------------- upgrade


def test_a_version_1_store_is_upgraded_and_reindexed(tmp_path: Path) -> None:
    """A file written by the first schema gains the clean/CJK index on open, and whoever opens
    it is told first."""
    path = tmp_path / "memory.sqlite3"
    write_version_1_store(path)
    told: list[str] = []

    with MemoryStore(path, on_upgrade=told.append) as store:
        assert len(told) == 1 and "reindexing 1 message," in told[0]
        assert ids(store.search("RED")) == [1]
        assert ids(store.search("東京")) == [1]
        assert [h.session_id for h in store.search_sessions("東京")] == [1]


# --------------------------------------------------------------------------- ranking


def bm25_top(store: MemoryStore, expr: str, n: int = 20) -> list[int]:
    with store._read() as conn:  # the reference ranking: every match scored
        return [r[0] for r in conn.execute(
            "SELECT rowid FROM messages_fts WHERE messages_fts MATCH ? ORDER BY rank LIMIT ?", (expr, n))]


def varied(rng: random.Random, word: str, i: int) -> str:
    """A message holding ``word`` 1-6 times among 5-60 other words."""
    others = [f"w{rng.randrange(5000)}" for _ in range(rng.randint(5, 60))]
    for _ in range(rng.randint(1, 6)):
        others.insert(rng.randrange(len(others) + 1), word)
    return f"entry {i} " + " ".join(others)


def test_frequent_and_rare_word_best_match_in_top_3(store: MemoryStore, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    texts = [varied(rng, "report" if rng.random() < 0.7 else "memo", i) for i in range(1500)]
    for i in rng.sample(range(1500), 40):
        texts[i] += " zyxtquartz" * rng.randint(1, 4)
    written = dict(zip(add(store, texts), texts, strict=True))
    both = {i for i, t in written.items() if "report" in t and "zyxtquartz" in t}
    best = bm25_top(store, '"report" AND "zyxtquartz"', 1)[0]
    found = ids(store.search("report zyxtquartz", limit=100))
    assert best in found[:3]
    assert set(found) == both  # every hit holds both words, and all of them came back
    from hermes_tui.memory import search as search_module

    monkeypatch.setattr(search_module, "CANDIDATES", 3)  # the rare word's matches are all ranked
    assert best in ids(store.search("report zyxtquartz"))[:3]


def test_frequent_word_alone_mixes_recency_and_bm25(store: MemoryStore) -> None:
    rng = random.Random(4)
    written = add(store, [varied(rng, "report", i) for i in range(3000)])
    reference = bm25_top(store, '"report"')

    store.search("report")  # a word in every message: noted for the upkeep thread
    store.maintain()
    top = ids(store.search("report"))

    assert len(top) == 20 and top[0] == written[-1]  # the newest leads
    assert len(set(top) & set(reference)) >= 10
    assert len(set(top) & set(written[-10:])) == 10  # and the ten newest are there
    with store._read() as conn:
        assert conn.execute("SELECT count(*) FROM frequent_top").fetchone()[0] == 40
    store.purge_message(reference[0])  # forgetting removes it from the kept best too
    assert reference[0] not in ids(store.search("report", limit=50))
