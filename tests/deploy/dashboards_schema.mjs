// Checks each Grafana dashboard's JSON against Grafana's published dashboard
// schema (npm @grafana/schema, its TypeScript types) with the TypeScript
// compiler: the JSON becomes the initialiser of a `Dashboard`-typed constant,
// so wrong types, missing required fields and unknown properties all fail.
// Nothing is written: the checked file is virtual, beside this script.
//   node dashboards_schema.mjs DASHBOARD_DIR
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import ts from "typescript";

const here = dirname(fileURLToPath(import.meta.url));
const dir = process.argv[2];
let failed = 0;
for (const file of readdirSync(dir).filter((f) => f.endsWith(".json")).sort()) {
  const virtual = join(here, `__${file}.check.ts`);
  const source = `import type { Dashboard } from "@grafana/schema";\nexport const board: Dashboard = ${readFileSync(join(dir, file), "utf8")};\n`;
  const options = { strict: true, noEmit: true, skipLibCheck: true, module: ts.ModuleKind.Node16, moduleResolution: ts.ModuleResolutionKind.Node16 };
  const host = ts.createCompilerHost(options);
  const { getSourceFile, fileExists, readFile } = host;
  host.getSourceFile = (name, lang, ...rest) => (name === virtual ? ts.createSourceFile(name, source, lang) : getSourceFile.call(host, name, lang, ...rest));
  host.fileExists = (name) => name === virtual || fileExists.call(host, name);
  host.readFile = (name) => (name === virtual ? source : readFile.call(host, name));
  const program = ts.createProgram([virtual], options, host);
  const diagnostics = ts.getPreEmitDiagnostics(program);
  if (diagnostics.length) {
    failed++;
    for (const d of diagnostics) {
      const where = d.file && d.start !== undefined ? d.file.getLineAndCharacterOfPosition(d.start) : null;
      console.log(`FAIL ${file}${where ? `:${where.line}` : ""}: ${ts.flattenDiagnosticMessageText(d.messageText, "\n")}`);
    }
  } else {
    console.log(`ok   ${file}: a valid Dashboard (@grafana/schema)`);
  }
}
process.exit(failed ? 1 : 0);
