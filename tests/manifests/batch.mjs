// Runs validate.mjs on several inputs in one process (the upstream schemas load once, which is
// most of a run's time), for tests/cli/manifests.sh's broken copies of deploy/:
//   node batch.mjs OUTDIR DEPLOY...
// writes OUTDIR/<i>.out (what validate.mjs printed) and OUTDIR/<i>.rc (its exit code) for the
// i-th DEPLOY, counting from 0.
import fs from "node:fs";
import path from "node:path";

const [outDir, ...inputs] = process.argv.slice(2);
const log = console.log;
for (const [i, input] of inputs.entries()) {
  const lines = [];
  console.log = (...a) => lines.push(a.join(" "));
  let rc;
  try {
    delete globalThis.validateExitCode;
    await import(`./validate.mjs?argv=${encodeURIComponent(JSON.stringify([input]))}&run=${i}`);
    rc = globalThis.validateExitCode ?? 2;
  } catch (e) {
    lines.push(`validate.mjs threw: ${e?.stack ?? e}`);
    rc = 2;
  } finally {
    console.log = log;
  }
  fs.writeFileSync(path.join(outDir, `${i}.out`), lines.join("\n") + "\n");
  fs.writeFileSync(path.join(outDir, `${i}.rc`), `${rc}\n`);
}
