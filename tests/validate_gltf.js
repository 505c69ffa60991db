// Validate glTF files with the Khronos glTF-Validator (npm `gltf-validator`), one Node process for many files.
// Usage: NODE_PATH=<folder holding node_modules/gltf-validator> node tests/validate_gltf.js a.glb b.vrma ...
// Prints one JSON line per file: {"file", "errors", "warnings", "messages": [[code, severity, pointer, message], ...]}.
const fs = require("fs");
const validator = require("gltf-validator");

async function main() {
  for (const file of process.argv.slice(2)) {
    const report = await validator.validateBytes(new Uint8Array(fs.readFileSync(file)), { maxIssues: 100 });
    const messages = report.issues.messages.map((m) => [m.code, m.severity, m.pointer || "", m.message]);
    console.log(JSON.stringify({ file, errors: report.issues.numErrors, warnings: report.issues.numWarnings,
                                 infos: report.issues.numInfos, messages }));
  }
}
main().catch((err) => { console.error(err); process.exit(1); });
