// Validates GET /v1/openapi.json of the built bundle with two standard OpenAPI 3.1 tools:
//   - @readme/openapi-parser: the OpenAPI 3.1 JSON Schema, plus what that schema cannot
//     express (path parameters, duplicate operationIds, $refs that resolve). Errors fail.
//   - @redocly/openapi-core, "recommended" rules: errors fail, warnings are printed.
// Usage: npm run build (at the root), then here: npm ci && node validate-openapi.mjs
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compileErrors, validate } from '@readme/openapi-parser';
import { createConfig, lint } from '@redocly/openapi-core';
import { startBundle } from './lib.mjs';

const server = await startBundle();
let failed = false;
try {
  const doc = await server.doc();
  const ops = Object.values(doc.paths).flatMap((item) => Object.values(item).map((op) => op.operationId));
  console.log(`fetched ${server.url}/openapi.json: OpenAPI ${doc.openapi}, ${Object.keys(doc.paths).length} paths, operations ${ops.join(', ')}`);

  const result = await validate(structuredClone(doc));
  if (!result.valid) {
    failed = true;
    console.error(`@readme/openapi-parser: INVALID\n${compileErrors(result)}`);
  } else if (result.warnings.length > 0) {
    console.log(`@readme/openapi-parser: valid, with warnings:\n${compileErrors(result)}`);
  } else {
    console.log('@readme/openapi-parser: valid, no errors, no warnings');
  }

  const dir = mkdtempSync(join(tmpdir(), 'petstore-openapi-'));
  const file = join(dir, 'openapi.json');
  writeFileSync(file, JSON.stringify(doc, null, 2));
  const problems = await lint({ ref: file, config: await createConfig({ extends: ['recommended'] }) });
  rmSync(dir, { recursive: true, force: true });
  const errors = problems.filter((p) => p.severity === 'error');
  if (errors.length > 0) failed = true;
  console.log(`@redocly/openapi-core (recommended): ${errors.length} errors, ${problems.length - errors.length} warnings`);
  for (const p of problems) console.log(`  ${p.severity} ${p.ruleId}: ${p.message} (${p.location?.[0]?.pointer ?? ''})`);
} finally {
  await server.stop();
}
process.exitCode = failed ? 1 : 0;
