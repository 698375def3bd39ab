/**
 * A one-line progress display on a terminal (rows, rows per second, time left from the bytes
 * read); nothing when stderr is not a terminal, so scripts and --json output stay clean.
 */

interface Terminal {
  isTTY?: boolean;
  write(text: string): boolean;
}

export function progressReporter(stream: Terminal, totalBytes: number, bytesRead: () => number) {
  const started = Date.now();
  let shown = false;
  return {
    update(rows: number) {
      if (!stream.isTTY) return;
      const seconds = Math.max((Date.now() - started) / 1000, 0.001);
      const rate = rows / seconds;
      const fraction = totalBytes > 0 ? Math.min(bytesRead() / totalBytes, 1) : 1;
      const left = fraction > 0 ? (seconds / fraction) * (1 - fraction) : 0;
      stream.write(`\r${rows.toLocaleString('en-US')} rows · ${Math.round(rate).toLocaleString('en-US')} rows/s · ${Math.round(fraction * 100)}% · ETA ${Math.ceil(left)}s   `);
      shown = true;
    },
    done() {
      if (shown) stream.write('\n');
    },
  };
}
