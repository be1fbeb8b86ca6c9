/** A one-line progress bar redrawn on a terminal stream (stderr): `label [####....] detail`. */
export function progressBar(stream: NodeJS.WriteStream, label: string) {
  let last = '';
  return {
    update(completed: number, total: number, detail = `${completed}/${total}`) {
      const width = 30;
      const filled = Math.round((completed / total) * width);
      const line = `${label} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${detail}`;
      if (line !== last) stream.write(`\r${line}`);
      last = line;
    },
    done() {
      if (last) stream.write(`\r${' '.repeat(last.length)}\r`);
    },
  };
}
