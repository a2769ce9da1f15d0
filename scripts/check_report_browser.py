#!/usr/bin/python3
"""report.html end to end in a real browser: headless chromium, no network, file://.

Writes a demo folder, copies it elsewhere (a report must not depend on where it was written),
then opens the copy's report.html#selftest with chromium --dump-dom. The page's self-test
(src/render/report/report_template.html) drives the controls as a user would and writes what it saw
into #selftest-result; this script checks:
  - the heatmap has L x L cells; the causal toggle hatches L(L-1)/2 of them;
  - at T = 1, the page's softmax of the stored scaled scores equals the engine's weights for
    every head and mask the run stored (max |diff| < 1e-5: float32 rounding only);
  - the head selector and the temperature slider change the rendered weights (and the layer
    selector, for a trained model's demo);
  - no two heatmap labels overlap, also at 42 tokens, where every k-th is labelled and the page
    says so; the lines view draws the lines of one query, not a haze of L x L;
  - the flash replay steps forward and ends with the max difference from the naive result;
  - the split-KV section lists every chunk and the merged row, and ends with the max difference
    between the merged row and the one-pass row;
  - every picture is embedded and decodes;
  - no request leaves the page: no resource fetched, no Content-Security-Policy violation, and
    chromium's own network log (--log-net-log) holds no http(s) or other remote URL.
It also takes a screenshot (kept under the output folder for people to look at), and checks
the report of a train folder (loss curve, the heads at each stored step) and of a trained model's demo (layer selector).

--sabotage runs the same checks on damaged copies of the page (a wrong in-page temperature,
an image fetched from the network, a dead "next" button): each must be caught, which shows
the checks can fail. The loss chart of a 1000-step train folder keeps every label inside it
("1000" was cut to "100").

Usage: /usr/bin/python3 scripts/check_report_browser.py path/to/attn-cli OUT_DIR [--sabotage]
Exit 0: passed; 1: failed; 77: chromium is not installed (skipped, with the reason printed).
"""
import glob
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

SKIP = 77


def find_chromium():
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    return None


def chromium(browser, url, args, work):
    """Runs headless chromium on url with no network at all; returns (stdout, net-log text)."""
    profile = tempfile.mkdtemp(dir=work)
    netlog = os.path.join(work, "netlog-%d.json" % len(os.listdir(work)))
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
           "--disable-background-networking", "--disable-component-update", "--disable-sync",
           "--disable-default-apps", "--disable-extensions", "--mute-audio",
           "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE localhost",
           "--user-data-dir=" + profile, "--log-net-log=" + netlog,
           "--virtual-time-budget=10000"] + args + [url]
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    log = open(netlog, encoding="utf-8", errors="replace").read() if os.path.exists(netlog) else ""
    return r.stdout.decode("utf-8", "replace"), log


def remote_urls(netlog):
    """The URLs the page itself asked the network for, from chromium's network log.

    The browser makes requests of its own (component updates, account lists, a spell-check
    dictionary: none reaches anything, with every host name unresolvable); the page's carry
    its file:// network isolation key, and those are the ones that must not exist."""
    try:
        log = json.loads(netlog)
    except ValueError:  # a log cut short: fall back to every URL next to a file:// key
        return sorted(set(re.findall(r'"network_isolation_key":"file://[^"]*"[^}]*"url":"([^"]+)"', netlog)))
    start = log["constants"]["logEventTypes"]["URL_REQUEST_START_JOB"]
    return sorted({e["params"]["url"] for e in log["events"]
                   if e["type"] == start and "url" in e.get("params", {})
                   and e["params"].get("network_isolation_key", "").startswith("file://")})


def selftest(browser, page, work):
    dom, netlog = chromium(browser, "file://" + os.path.abspath(page) + "#selftest", ["--dump-dom"], work)
    m = re.search(r'<pre id="selftest-result"[^>]*>(.*?)</pre>', dom, re.S)
    if not m:
        return None, remote_urls(netlog), dom[-2000:]
    return json.loads(html.unescape(m.group(1))), remote_urls(netlog), ""


class Checker:
    def __init__(self):
        self.failures = []

    def check(self, ok, what):
        print(("  ok    " if ok else "  FAIL  ") + what)
        if not ok:
            self.failures.append(what)


def check_demo(c, result, urls, manifest, trained):
    L = len(manifest["tokens"])
    c.check(result is not None and result.get("done") is True, "the page ran its self-test")
    if result is None:
        return
    c.check(result["cells"] == L * L, "heatmap cells: %s, expected %d x %d" % (result["cells"], L, L))
    first = "'%s' [0]" % manifest["tokens"][0]
    engine = manifest["results"]["model"]["attention"][0][0][0][0] if trained else manifest["results"]["single_head"]["weights"][0][0]
    shown = repr(float(engine))
    shown = shown[:-2] if shown.endswith(".0") else shown  # as JavaScript writes the number
    c.check(result.get("hover", "").startswith("query %s \u2192 key %s: weight" % (first, first)) and
            "engine's: %s)" % shown in result["hover"],
            "hover names query, key and the engine's exact weight %r: %r" % (engine, result.get("hover")))
    heads = len(manifest["results"]["multi_head"]["scaled_scores"])
    c.check(result["engine_checks"] >= (heads if trained else heads + 3),
            "engine checks at T = 1: %s (every head and mask the run stored)" % result["engine_checks"])
    c.check(result["engine_max_diff"] < 1e-5,
            "in-page softmax at T = 1 vs the engine's weights: max |diff| = %.3g < 1e-5" % result["engine_max_diff"])
    c.check(result["head_changes"] is True, "the head selector changes the rendered weights")
    c.check(result["mean_cells"] == L * L, "the head mean renders %s cells" % result["mean_cells"])
    if trained:
        c.check(result.get("layer_changes") is True, "the layer selector changes the rendered weights")
    c.check(result["temperature_changes"] is True and abs(result["temperature"] - 2) < 0.01,
            "the temperature slider (T = %.3f) changes the rendered weights" % result["temperature"])
    c.check(result["temperature_max_diff"] < 1e-12, "at T = 2 the cells hold softmax(S / 2) of the stored scores")
    c.check(result["causal_masked_cells"] == L * (L - 1) // 2,
            "causal toggle: %s masked cells, expected %d" % (result["causal_masked_cells"], L * (L - 1) // 2))
    c.check(result.get("lines_queries") == 1 and 0 < result["lines_drawn"] <= L,
            "the lines view draws one query's lines only: %s lines from %s queries (at most %d)"
            % (result["lines_drawn"], result.get("lines_queries"), L))
    c.check(result.get("heatmap_label_overlaps") == 0 and result.get("heatmap_labels", 0) > 0,
            "heatmap labels: %s per axis, %s overlapping pairs" % (result.get("heatmap_labels"), result.get("heatmap_label_overlaps")))
    replay = manifest["results"]["flash"]["teaching"]["replay"]
    c.check(result["replay_steps"] == len(replay["steps"]), "replay: %s steps" % result["replay_steps"])
    c.check(result.get("replay_label_overlaps") == 0,
            "replay grid labels: %s overlapping pairs" % result.get("replay_label_overlaps"))
    c.check(result["replay_moved"] is True and result["replay_label"].startswith("step 2 of"),
            "replay steps forward (%r)" % result["replay_label"])
    c.check(result["replay_final"] is not None and "max |flash \u2212 naive|" in result["replay_final"],
            "the replay ends with the max difference from the naive result")
    split = manifest["results"]["split_kv"]
    c.check(result["splitkv_rows"] == len(split["chunks"]) + 1,
            "split-KV table: %s rows, expected %d chunks and the merged row" % (result["splitkv_rows"], len(split["chunks"])))
    c.check(result["splitkv_final"] is not None and "max |merged \u2212 one pass|" in result["splitkv_final"],
            "the split-KV section ends with the max difference from the one-pass row")
    pngs = {os.path.splitext(a["path"])[0] for a in manifest["artifacts"] if a["path"].endswith((".png", ".svg"))}
    c.check(result["pictures"] == len(pngs) and result["pictures_decoded"] == len(pngs),
            "pictures: %s embedded, %s decoded, %d in the folder" % (result["pictures"], result["pictures_decoded"], len(pngs)))
    check_offline(c, result, urls)


def check_offline(c, result, urls):
    c.check(result["resources_fetched"] == [], "no resource fetched by the page: %s" % result["resources_fetched"])
    c.check(result["csp_violations"] == 0, "no request attempted (CSP violations: %s)" % result["csp_violations"])
    c.check(urls == [], "chromium's network log holds no remote URL: %s" % urls)


def run(cli, out):
    browser = find_chromium()
    if not browser:
        print("SKIPPED: chromium is not installed, so report.html was not opened in a browser "
              "(scripts/test.sh installs Debian's chromium; apt-get install chromium)")
        return SKIP
    os.makedirs(out, exist_ok=True)
    work = tempfile.mkdtemp(prefix="report-browser-")
    c = Checker()
    try:
        demo = os.path.join(work, "demo")
        subprocess.run([cli, "demo", "The cat sat on the mat", "--out", demo], check=True, stdout=subprocess.DEVNULL)
        copy = os.path.join(work, "copied", "cat-demo")
        shutil.copytree(demo, copy)
        shutil.rmtree(demo)  # the copy must stand alone
        manifest = json.load(open(os.path.join(copy, "manifest.json"), encoding="utf-8"))
        page = os.path.join(copy, "report.html")
        c.check(any(a["path"] == "report.html" and a["kind"] == "report" for a in manifest["artifacts"]),
                "manifest.json lists report.html with kind \"report\"")
        print("demo \"The cat sat on the mat\", copied folder:")
        result, urls, tail = selftest(browser, page, work)
        if result is None:
            print(tail)
        check_demo(c, result, urls, manifest, trained=False)
        shot = os.path.join(out, "report.png")
        chromium(browser, "file://" + os.path.abspath(page), ["--window-size=1200,2200", "--screenshot=" + shot], work)
        c.check(os.path.exists(shot) and os.path.getsize(shot) > 50000,
                "screenshot %s (%s bytes)" % (shot, os.path.getsize(shot) if os.path.exists(shot) else 0))

        print("a 42-token demo (label thinning, the lines of one query):")
        words = ("the quick brown fox jumps over the lazy dog while the cat sat on the mat and the bird sang "
                 "a song in the tall green tree near the old river bank under a bright blue sky early this fine morning .")
        long_demo = os.path.join(work, "long-demo")
        subprocess.run([cli, "demo", words, "--out", long_demo], check=True, stdout=subprocess.DEVNULL)
        lmanifest = json.load(open(os.path.join(long_demo, "manifest.json"), encoding="utf-8"))
        result, urls, tail = selftest(browser, os.path.join(long_demo, "report.html"), work)
        if result is None:
            print(tail)
        check_demo(c, result, urls, lmanifest, trained=False)
        if result is not None:
            L = len(lmanifest["tokens"])
            c.check(L == 42 and result.get("heatmap_labels", L) < L and "labelled" in result.get("heatmap_note", ""),
                    "%d tokens: %s labels per axis, and the page says which: %r"
                    % (L, result.get("heatmap_labels"), result.get("heatmap_note")))
        chromium(browser, "file://" + os.path.join(long_demo, "report.html"),
                 ["--window-size=1200,1400", "--screenshot=" + os.path.join(out, "report-42-tokens.png")], work)

        print("a 1000-step train folder (the loss chart's labels):")
        long_train = os.path.join(work, "train-1000")
        subprocess.run([cli, "train", "--steps", "1000", "--log-every", "100", "--batch", "4", "--d-model", "16",
                        "--layers", "1", "--heads", "1", "--context", "8", "--vocab", "16", "--out", long_train],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        subprocess.run([cli, "report", long_train], check=True, stdout=subprocess.DEVNULL)
        result, urls, tail = selftest(browser, os.path.join(long_train, "report.html"), work)
        c.check(result is not None and result.get("loss_texts_outside") == [],
                "every label of the loss chart is inside it: cut off %r" % (result or {}).get("loss_texts_outside"))

        print("a trained model's demo (layer selector):")
        train = os.path.join(work, "train")
        subprocess.run([cli, "train", "--steps", "20", "--out", train], check=True, stdout=subprocess.DEVNULL)
        mdemo = os.path.join(work, "model-demo")
        subprocess.run([cli, "demo", "--model", os.path.join(train, "model"), "--out", mdemo], check=True,
                       stdout=subprocess.DEVNULL)
        mmanifest = json.load(open(os.path.join(mdemo, "manifest.json"), encoding="utf-8"))
        result, urls, tail = selftest(browser, os.path.join(mdemo, "report.html"), work)
        if result is None:
            print(tail)
        check_demo(c, result, urls, mmanifest, trained=True)

        print("a train folder (attn-cli report):")
        subprocess.run([cli, "report", train], check=True, stdout=subprocess.DEVNULL)
        result, urls, tail = selftest(browser, os.path.join(train, "report.html"), work)
        c.check(result is not None and result.get("done") is True, "the train report ran its self-test")
        if result is not None:
            steps = len(json.load(open(os.path.join(train, "train.json")))["steps"])
            c.check(result["train_points"] == steps and result["loss_line"], "loss curve of %d points" % steps)
            c.check(result.get("snapshots", 0) >= 2 and result.get("snapshot_changes") is True,
                    "the step slider moves through %s snapshots of the heads and changes them (%r)"
                    % (result.get("snapshots"), result.get("snapshot_label")))
            c.check(result.get("snapshot_tokens", 0) > 0 and result.get("snapshot_svg_width", 0) > 0,
                    "the snapshots are drawn over the shown sequence's %s tokens" % result.get("snapshot_tokens"))
            c.check(result["pictures"] > 0 and result["pictures_decoded"] == result["pictures"],
                    "train pictures: %s embedded and decoded" % result["pictures"])
            check_offline(c, result, urls)
            chromium(browser, "file://" + os.path.join(train, "report.html"),
                     ["--window-size=1200,1600", "--screenshot=" + os.path.join(out, "report-train.png")], work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("%d checks failed" % len(c.failures) if c.failures else "report.html passed in chromium")
    return 1 if c.failures else 0


def sabotage(cli, out):
    """Each damaged page must fail the checks; returns 0 when every damage was caught."""
    browser = find_chromium()
    if not browser:
        print("SKIPPED: chromium is not installed")
        return SKIP
    work = tempfile.mkdtemp(prefix="report-sabotage-")
    missed = []
    try:
        demo = os.path.join(work, "demo")
        subprocess.run([cli, "demo", "The cat sat on", "--out", demo], check=True, stdout=subprocess.DEVNULL)
        manifest = json.load(open(os.path.join(demo, "manifest.json"), encoding="utf-8"))
        page = open(os.path.join(demo, "report.html"), encoding="utf-8").read()
        damages = {
            "a wrong in-page temperature": ("Math.exp(s / T - m)", "Math.exp(s / (1.5 * T) - m)"),
            "an image fetched from the network": ("<body>", '<body><img src="http://192.0.2.1/x.png">'),
            "a fetch with the page's policy removed": ('http-equiv="Content-Security-Policy"', 'http-equiv="X-None"'),
            "a dead next button": ('$("replay-next").addEventListener("click", () => go(replayStep + 1));', ""),
            "the split-KV section never drawn": ("  setupSplitKv();\n", ""),
        }
        for name, (old, new) in damages.items():
            assert old in page, "sabotage %r: the page no longer contains %r" % (name, old)
            damaged = page.replace(old, new, 1)
            if "policy removed" in name:  # and something to fetch, which only the network log sees
                damaged = damaged.replace("<body>", '<body><script>fetch("http://192.0.2.1/y").catch(() => 0)</script>', 1)
            bad = os.path.join(work, "bad.html")
            open(bad, "w", encoding="utf-8").write(damaged)
            c = Checker()
            print("sabotage: %s" % name)
            result, urls, _ = selftest(browser, bad, work)
            check_demo(c, result, urls, manifest, trained=False)
            if not c.failures:
                missed.append(name)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print("sabotage missed: %s" % missed if missed else "every sabotage was caught")
    return 1 if missed else 0


if __name__ == "__main__":
    if len(sys.argv) < 3:
        print(__doc__)
        sys.exit(2)
    cli, out = sys.argv[1], sys.argv[2]
    sys.exit(sabotage(cli, out) if "--sabotage" in sys.argv[3:] else run(cli, out))
