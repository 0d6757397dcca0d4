// The pure pieces behind a turn's files and the editor's context: a FileChange's diff turned back
// into the diff editor's two texts (and refused where it would be wrong), the context parts the
// model reads, the @-mention completion's ranking, and file references in the chat.
import assert from "node:assert/strict";
import { describe, it } from "node:test";
import {
  contextLabel,
  contextPart,
  mentionAt,
  mentionsIn,
  parseContextPart,
  parseFileReference,
  rankMentions,
} from "../../src/shared/context";
import { diffTexts, parseUnifiedDiff, reverseApply } from "../../src/shared/unifiedDiff";
import { filesSummary, reasonText } from "../../src/shared/turns";

const BEFORE = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"].map((l) => `${l}\n`).join("");
// b → B (line 2), i removed, k added at the end: two hunks with 3 lines of context, as git makes them
const AFTER = ["a", "B", "c", "d", "e", "f", "g", "h", "j", "k"].map((l) => `${l}\n`).join("");
const DIFF = "@@ -1,5 +1,5 @@\n a\n-b\n+B\n c\n d\n e\n@@ -6,5 +6,5 @@\n f\n g\n h\n-i\n j\n+k\n";

describe("a turn's diff back into two texts", () => {
  it("rebuilds the text before the change from the text after it", () => {
    assert.equal(reverseApply(parseUnifiedDiff(DIFF), AFTER), BEFORE);
    assert.deepEqual(diffTexts({ kind: "update", diff: DIFF }, AFTER), { before: BEFORE, after: AFTER, whole: true });
  });

  it("keeps a missing final newline where the diff says", () => {
    const diff = "@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+y\n";
    assert.equal(reverseApply(parseUnifiedDiff(diff), "x\ny\n"), "x\ny");
  });

  it("handles pure insertions and deletions at their places", () => {
    const insert = "@@ -2,0 +3,2 @@\n+n1\n+n2\n";
    assert.equal(reverseApply(parseUnifiedDiff(insert), "l1\nl2\nn1\nn2\nl3\n"), "l1\nl2\nl3\n");
    const remove = "@@ -2,2 +1,0 @@\n-l2\n-l3\n";
    assert.equal(reverseApply(parseUnifiedDiff(remove), "l1\nl4\n"), "l1\nl2\nl3\nl4\n");
  });

  it("never reverses onto a file changed since, nor a cut diff: the hunks alone, saying why", () => {
    const changedSince = AFTER.replace("B\n", "B!\n");
    assert.equal(reverseApply(parseUnifiedDiff(DIFF), changedSince), undefined);
    const texts = diffTexts({ kind: "update", diff: DIFF }, changedSince);
    assert.equal(texts.whole, false);
    assert.match(texts.note ?? "", /changed since/);
    assert.equal(texts.before, "⋯ @@ -1,5 +1,5 @@\na\nb\nc\nd\ne\n⋯ @@ -6,5 +6,5 @@\nf\ng\nh\ni\nj\n");
    assert.equal(texts.after, "⋯ @@ -1,5 +1,5 @@\na\nB\nc\nd\ne\n⋯ @@ -6,5 +6,5 @@\nf\ng\nh\nj\nk\n");
    const cut = diffTexts({ kind: "update", diff: `${DIFF}[diff cut: 10 more lines]\n` }, AFTER);
    assert.equal(cut.whole, false);
    assert.match(cut.note ?? "", /cut/);
    assert.match(cut.after, /\[diff cut: 10 more lines\]\n$/);
  });

  it("shows an added file from disk or its diff, a deleted one from its diff, a binary one as such", () => {
    const added = "@@ -0,0 +1,2 @@\n+one\n+two\n";
    assert.deepEqual(diffTexts({ kind: "add", diff: added }, "one\ntwo\n"), { before: "", after: "one\ntwo\n", whole: true });
    assert.deepEqual(diffTexts({ kind: "add", diff: added }, undefined), { before: "", after: "one\ntwo\n", whole: true });
    const deleted = "@@ -1,2 +0,0 @@\n-one\n-two\n";
    assert.deepEqual(diffTexts({ kind: "delete", diff: deleted }, undefined), { before: "one\ntwo\n", after: "", whole: true });
    assert.match(diffTexts({ kind: "update", binary: true }, "x").note ?? "", /binary/);
  });
});

describe("context from the editor", () => {
  it("is a text part naming the path and lines, read back as a chip", () => {
    const part = contextPart({ path: "src/a.ts", startLine: 3, endLine: 4 }, "x();\ny();", 40);
    assert.equal(part, '<file path="src/a.ts" lines="3-4" of="40">\nx();\ny();\n</file>');
    assert.deepEqual(parseContextPart(part), { path: "src/a.ts", startLine: 3, endLine: 4, body: "x();\ny();\n" });
    assert.deepEqual(parseContextPart(contextPart({ path: 'we"ird.md' }, "t\n")), { path: 'we"ird.md', body: "t\n" });
    assert.equal(parseContextPart("just text"), undefined);
    assert.equal(contextLabel({ path: "a.ts", startLine: 3, endLine: 3 }), "a.ts:3");
    assert.equal(contextLabel({ path: "a.ts", startLine: 3, endLine: 9 }), "a.ts:3-9");
    const long = contextPart({ path: "big.txt" }, "x".repeat(100_010));
    assert.match(long, /\[cut: the first 100000 of 100010 characters\]\n<\/file>$/);
  });

  it("finds @-mentions and the one being typed", () => {
    assert.deepEqual(mentionsIn("see @src/a.ts, and @b.md. mail me@x.org"), ["src/a.ts", "b.md"]);
    assert.deepEqual(mentionAt("look at @src/ap", 15), { start: 8, query: "src/ap" });
    assert.deepEqual(mentionAt("@", 1), { start: 0, query: "" });
    assert.equal(mentionAt("me@x", 4), undefined);
    assert.equal(mentionAt("@a.ts done", 10), undefined);
  });

  it("ranks files: name prefix, name, path, then letters in order; shorter first", () => {
    const files = ["src/app.ts", "test/app.test.ts", "src/mapper.ts", "apps/readme.md", "src/a/p/p.ts"];
    assert.deepEqual(
      rankMentions(files, "app").map((m) => m.path),
      ["src/app.ts", "test/app.test.ts", "src/mapper.ts", "apps/readme.md", "src/a/p/p.ts"],
    );
    assert.equal(rankMentions(files, "zzz").length, 0);
    assert.equal(rankMentions(files, "", 2).length, 2);
  });

  it("reads file references in the chat", () => {
    assert.deepEqual(parseFileReference("src/a.ts:12"), { path: "src/a.ts", line: 12 });
    assert.deepEqual(parseFileReference("src/a.ts:12:5"), { path: "src/a.ts", line: 12 });
    assert.deepEqual(parseFileReference("README.md#L3"), { path: "README.md", line: 3 });
    assert.deepEqual(parseFileReference("/etc/hosts"), { path: "/etc/hosts" });
    assert.equal(parseFileReference("npm run build"), undefined);
    assert.equal(parseFileReference("x.y()"), undefined);
  });
});

describe("under a turn", () => {
  it("sums its files and says why a runtime restart ended it", () => {
    assert.equal(filesSummary([{ path: "/a", kind: "update", additions: 10, deletions: 4 }, { path: "/b", kind: "add", additions: 2, deletions: 0 }, { path: "/c", kind: "delete", additions: 0, deletions: 0 }]), "3 files changed +12 −4");
    assert.equal(filesSummary([{ path: "/a", kind: "add", additions: 1, deletions: 0 }]), "1 file changed +1 −0");
    assert.match(reasonText({ turnId: "t", status: "interrupted", reason: "runtimeStopped" }) ?? "", /runtime stopped/);
    assert.equal(reasonText({ turnId: "t", status: "completed", reason: "completed" }), undefined);
  });
});
