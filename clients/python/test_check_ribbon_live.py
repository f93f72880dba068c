"""The Ribbon filter checker against a live server (issue #33 item 5).

Filters of nine shapes: ε = 1 % on 1e5 items, 0.1 %, 0.01 %, 3 % (fractional result bits),
2^-7 / 0.9 (whole result bits), ε = 0.5, one item, a crowded set whose rows all start in the
first slots (most items bumped), staged with RF.MADD and built by RF.BUILD, plus the empty filter
(which RF.MADD cannot stage: the core's build from core/examples/ribbon_vectors.rs, uploaded by
RF.LOADCHUNK). Each is walked with RF.SCANDUMP and rebuilt by ``RibbonFilter.from_scandump``,
which answers exactly what RF.MEXISTS answers on every probe: 1 030 000 in all, members and
never-staged items (ASCII, UTF-8, raw bytes). The core's side is tests/ribbon_checkers.rs.

Starts its own redis-server (free 127.0.0.1 port, temporary directory) with $BF_MODULE. Run with
clients/python/check_run.sh."""

import os
import unittest

import test_check_ribbon
from redis_bf_check import RibbonFilter, hash_pair
from test_check_identity import MODULE, Server, probes


def numbered(prefix, n):
    return ["%s%d" % (prefix, i) for i in range(n)]


def crowded(n):
    """``n`` items whose hash is below 2^54: their rows start in the filter's first slots."""
    out, i = [], 0
    while len(out) < n:
        item = "crowd:%d" % i
        if hash_pair(item)[0] < 1 << 54:
            out.append(item)
        i += 1
    return out


#: key, members, the rate given to RF.BUILD ... ERROR, probes asked.
SHAPES = [
    ("rf:e2_1e5", numbered("a:", 100_000), "0.01", 300_000),
    ("rf:e3", numbered("b:", 20_000), "0.001", 200_000),
    ("rf:e4", numbered("c:", 20_000), "0.0001", 200_000),
    ("rf:frac", numbered("f:", 5_000), "0.03", 100_000),
    ("rf:whole", numbered("w:", 5_000), repr(1 / 128 / 0.9), 50_000),
    ("rf:half", numbered("h:", 2_000), "0.5", 100_000),
    ("rf:one", ["one:0"], "0.01", 20_000),
    ("rf:crowded", None, "0.01", 30_000),  # crowded(300), made when the test runs
    ("rf:empty", [], "0.01", 30_000),
]


def rf_scandump(r, key):
    """The (iterator, bytes) pairs of a whole RF.SCANDUMP walk, without the end pair."""
    chunks, it = [], 0
    while True:
        it, data = r.execute_command("RF.SCANDUMP", key, it)
        if it == 0:
            return chunks
        chunks.append((it, data))


SERVER = []


def setUpModule():
    # The empty filter's walk comes from the core's vectors (shared with test_check_ribbon).
    if "empty" not in test_check_ribbon.SHAPES:
        test_check_ribbon.setUpModule()
    if not os.path.exists(MODULE):
        raise RuntimeError("module not found: %s (cargo build --release)" % MODULE)
    SERVER.append(Server())


def tearDownModule():
    test_check_ribbon.tearDownModule()
    for s in SERVER:
        s.stop()


class Agreement(unittest.TestCase):
    def test_every_answer_is_rf_mexists_on_nine_shapes(self):
        r = SERVER[0].r
        asked = 0
        for n, (key, members, rate, count) in enumerate(SHAPES):
            members = crowded(300) if members is None else members
            if members:
                for i in range(0, len(members), 1000):
                    r.execute_command("RF.MADD", key, *members[i : i + 1000])
                self.assertIn(r.execute_command("RF.BUILD", key, "ERROR", rate), (b"OK", True), key)
            else:
                for it, data in test_check_ribbon.SHAPES["empty"]["pairs"]:
                    if it:
                        r.execute_command("RF.LOADCHUNK", key, it, data)
            f = RibbonFilter.from_scandump(rf_scandump(r, key))
            items = probes(members, n + 1, count)
            positives = 0
            differ = []
            pipe = r.pipeline(transaction=False)
            for i in range(0, len(items), 20_000):
                for j in range(i, min(len(items), i + 20_000), 1000):
                    pipe.execute_command("RF.MEXISTS", key, *items[j : j + 1000])
                server = [a for reply in pipe.execute() for a in reply]
                for item, s in zip(items[i : i + 20_000], server):
                    local = f.contains(item)
                    positives += local
                    if int(local) != s:
                        differ.append(item)
            self.assertEqual(differ[:3], [], "%s: %d answers differ from RF.MEXISTS" % (key, len(differ)))
            member_probes = items[::4] if members else []
            self.assertTrue(all(f.contains(m) for m in member_probes), "%s: a member answered absent" % key)
            self.assertEqual(f.items, len(members), key)
            # What each shape is named for.
            strangers = len(items) - len(member_probes)
            false_positives = positives - len(member_probes)
            if key == "rf:crowded":
                self.assertGreater(f.bumped_count, 100, key)
            elif key == "rf:whole":
                # Whole result bits: every start position in a lower block but the very last one.
                self.assertEqual(f.upper_start, f.blocks - 1, "%s: one upper block" % key)
            elif key == "rf:half":
                self.assertGreater(false_positives * 3, strangers, key)
            else:
                self.assertLessEqual(false_positives, float(rate) * strangers * 1.3 + 5, key)
            if key in ("rf:e2_1e5", "rf:e3", "rf:e4", "rf:frac"):
                self.assertTrue(0 < f.upper_start < f.blocks, "%s: fractional result bits" % key)
            print(
                "%s: %d items, %d body bytes, %d probes, %d false positives of %d, %d bumped, 0 differ"
                % (key, f.items, f.byte_length, len(items), false_positives, strangers, f.bumped_count)
            )
            asked += len(items)
        self.assertEqual(asked, 1_030_000)


if __name__ == "__main__":
    unittest.main()
