/**
 * A small Prometheus registry: counters, gauges and histograms with labels, rendered in the text
 * exposition format. An interface so a test can swap in a recorder.
 */
export type Labels = Record<string, string>;

export type Metrics = {
  inc(name: string, labels?: Labels, by?: number): void;
  set(name: string, value: number, labels?: Labels): void;
  observe(name: string, seconds: number, labels?: Labels): void;
  render(): string;
};

const BUCKETS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

const key = (labels: Labels = {}) =>
  Object.entries(labels)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k}="${v.replaceAll('\\', '\\\\').replaceAll('"', '\\"').replaceAll('\n', '\\n')}"`)
    .join(',');

export const createMetrics = (help: Record<string, string> = {}): Metrics => {
  const counters = new Map<string, Map<string, number>>();
  const gauges = new Map<string, Map<string, number>>();
  const histograms = new Map<string, Map<string, { counts: number[]; sum: number; count: number }>>();
  const series = <T>(m: Map<string, Map<string, T>>, name: string) => {
    const existing = m.get(name);
    if (existing) return existing;
    const created = new Map<string, T>();
    m.set(name, created);
    return created;
  };
  const header = (name: string, type: string) =>
    `${help[name] ? `# HELP ${name} ${help[name]}\n` : ''}# TYPE ${name} ${type}\n`;
  return {
    inc: (name, labels, by = 1) => {
      const s = series(counters, name);
      s.set(key(labels), (s.get(key(labels)) ?? 0) + by);
    },
    set: (name, value, labels) => {
      series(gauges, name).set(key(labels), value);
    },
    observe: (name, seconds, labels) => {
      const s = series(histograms, name);
      const k = key(labels);
      const h = s.get(k) ?? { counts: BUCKETS.map(() => 0), sum: 0, count: 0 };
      BUCKETS.forEach((b, i) => {
        if (seconds <= b) h.counts[i] = (h.counts[i] ?? 0) + 1;
      });
      h.sum += seconds;
      h.count += 1;
      s.set(k, h);
    },
    render: () => {
      let out = '';
      const braces = (k: string, extra = '') => {
        const all = [k, extra].filter(Boolean).join(',');
        return all ? `{${all}}` : '';
      };
      for (const [name, s] of counters) {
        out += header(name, 'counter');
        for (const [k, v] of s) out += `${name}${braces(k)} ${v}\n`;
      }
      for (const [name, s] of gauges) {
        out += header(name, 'gauge');
        for (const [k, v] of s) out += `${name}${braces(k)} ${v}\n`;
      }
      for (const [name, s] of histograms) {
        out += header(name, 'histogram');
        for (const [k, h] of s) {
          BUCKETS.forEach((b, i) => {
            out += `${name}_bucket${braces(k, `le="${b}"`)} ${h.counts[i]}\n`;
          });
          out += `${name}_bucket${braces(k, 'le="+Inf"')} ${h.count}\n`;
          out += `${name}_sum${braces(k)} ${h.sum}\n${name}_count${braces(k)} ${h.count}\n`;
        }
      }
      return out;
    },
  };
};
