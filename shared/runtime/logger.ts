export type LogFields = Record<string, unknown>;

export type Logger = {
  debug(msg: string, fields?: LogFields): void;
  info(msg: string, fields?: LogFields): void;
  warn(msg: string, fields?: LogFields): void;
  error(msg: string, fields?: LogFields): void;
  /** A logger whose lines all carry these fields (event id, function, object). */
  child(fields: LogFields): Logger;
};

const LEVELS = { debug: 10, info: 20, warn: 30, error: 40 } as const;
type Level = keyof typeof LEVELS;

/** Field names whose values are never written, whatever a caller passes. */
const SECRET_KEY = /pass(word)?|secret|token|key$|authorization|credential/i;

const redact = (fields: LogFields): LogFields =>
  Object.fromEntries(
    Object.entries(fields).map(([k, v]) => [
      k,
      SECRET_KEY.test(k) ? '[redacted]' : v instanceof Error ? { name: v.name, message: v.message } : v,
    ]),
  );

/** Structured JSON lines on stderr (stdout stays free for programs that print results). */
export const createLogger = (
  base: LogFields = {},
  o: { level?: Level; write?: (line: string) => void } = {},
): Logger => {
  const min =
    LEVELS[o.level ?? (process.env.TIDEWAY_LOG_LEVEL as Level | undefined) ?? 'info'] ?? LEVELS.info;
  const write = o.write ?? ((line: string) => process.stderr.write(`${line}\n`));
  const make = (bound: LogFields): Logger => {
    const log =
      (level: Level) =>
      (msg: string, fields: LogFields = {}) => {
        if (LEVELS[level] < min) return;
        write(
          JSON.stringify({ time: new Date().toISOString(), level, msg, ...redact({ ...bound, ...fields }) }),
        );
      };
    return {
      debug: log('debug'),
      info: log('info'),
      warn: log('warn'),
      error: log('error'),
      child: (fields) => make({ ...bound, ...fields }),
    };
  };
  return make(base);
};
