// The Prometheus text exposition format, version 0.0.4, written by hand: # HELP and # TYPE
// for every family, label values escaped, histograms as cumulative _bucket lines with
// le="+Inf", then _sum and _count.
// https://prometheus.io/docs/instrumenting/exposition_formats/#text-based-format
import type { Labels, MetricsSnapshot } from './contract.js';

export const EXPOSITION_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

/** A label value: backslash, double quote and line feed escaped. */
export function escapeLabelValue(v: string): string {
  return v.replace(/[\\"\n]/g, (c) => (c === '\n' ? '\\n' : `\\${c}`));
}

/** HELP text: backslash and line feed escaped. */
function escapeHelp(v: string): string {
  return v.replace(/[\\\n]/g, (c) => (c === '\n' ? '\\n' : '\\\\'));
}

/** A sample value as Go's ParseFloat reads it. */
export function formatValue(v: number): string {
  if (Number.isNaN(v)) return 'NaN';
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  return String(v);
}

function labelText(labels: Labels, extra?: string): string {
  const parts: string[] = [];
  for (const [k, v] of Object.entries(labels)) parts.push(`${k}="${escapeLabelValue(v)}"`);
  if (extra !== undefined) parts.push(extra);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

export function render(snapshot: MetricsSnapshot): string {
  let out = '';
  for (const f of snapshot.families) {
    out += `# HELP ${f.name} ${escapeHelp(f.help)}\n# TYPE ${f.name} ${f.type}\n`;
    if (f.type !== 'histogram') {
      for (const s of f.samples) out += `${f.name}${labelText(s.labels)} ${formatValue(s.value)}\n`;
      continue;
    }
    for (const s of f.samples) {
      let cumulative = 0;
      f.bounds.forEach((bound, i) => {
        cumulative += s.counts[i] ?? 0;
        out += `${f.name}_bucket${labelText(s.labels, `le="${formatValue(bound)}"`)} ${cumulative}\n`;
      });
      cumulative += s.counts[f.bounds.length] ?? 0;
      out += `${f.name}_bucket${labelText(s.labels, 'le="+Inf"')} ${cumulative}\n`;
      out += `${f.name}_sum${labelText(s.labels)} ${formatValue(s.sum)}\n`;
      out += `${f.name}_count${labelText(s.labels)} ${cumulative}\n`;
    }
  }
  return out;
}
