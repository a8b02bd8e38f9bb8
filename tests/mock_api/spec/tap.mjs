// The checks' output, as spec.sh's tally() counts it: "ok - WHAT", or "not ok - WHAT" followed by
// the reason on "#   " lines. exit() ends the process: 1 if any check failed, else 0.
let failures = 0;

export function report(ok, what, why) {
  console.log(`${ok ? 'ok' : 'not ok'} - ${what}`);
  if (!ok) {
    failures++;
    if (why) console.log(`#   ${String(why).split('\n').join('\n#   ')}`);
  }
}

export const failed = () => failures;

export function exit() {
  process.exit(failures ? 1 : 0);
}
