/*
 * Buffers the backup data path made itself and hands from stage to stage (snapshot blocks,
 * compressor and cipher output). Once the last stage that reads one is done with it, `release`
 * frees its memory at once. Left to the garbage collector, consumed chunks are freed only after
 * ~64 MiB more have been allocated (V8 collects ArrayBuffer memory that late when little else is
 * allocated): the process held that much garbage, and every new chunk touched fresh pages. Only
 * buffers marked with `own` are ever released, so a caller's own data is never touched.
 */
const owned = new WeakSet<ArrayBufferLike>();

/** Marks `b`'s memory as the data path's: nothing outside it holds or writes it. */
export const own = (b: Buffer): Buffer => {
  owned.add(b.buffer);
  return b;
};

/**
 * Frees the memory under `b` when the data path owns it and `b` is its last part: chunks are used
 * in order, so every earlier part of that memory was used already, and a producer never writes
 * into memory it handed on. Detached, any view of it reads as empty.
 */
export const release = (b: Buffer): void => {
  const ab = b.buffer;
  if (b.byteOffset + b.length !== ab.byteLength || !owned.has(ab)) return;
  owned.delete(ab);
  (ab as ArrayBuffer).transfer(0);
};
