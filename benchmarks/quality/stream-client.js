// Reads a streamed quality response chunk by chunk without keeping it, checking its shape:
// starts with '[{', every record's random is randsize '0'/'1' characters, ends with '}]'.
//   node stream-client.js URL
const url = process.argv[2];
const res = await fetch(url);
let bytes = 0;
let head = '';
let tail = '';
let digits = 0;
let inRandom = false;
let pending = '';
for await (const chunk of res.body) {
  bytes += chunk.length;
  if (head.length < 64) head += Buffer.from(chunk).toString('latin1', 0, 64);
  const text = pending + Buffer.from(chunk).toString('latin1');
  pending = '';
  // Count the digits inside "random":"..." strings.
  let i = 0;
  while (i < text.length) {
    if (inRandom) {
      const end = text.indexOf('"', i);
      digits += (end < 0 ? text.length : end) - i;
      if (end < 0) break;
      inRandom = false;
      i = end + 1;
    } else {
      const start = text.indexOf('"random":"', i);
      if (start < 0) {
        pending = text.slice(Math.max(i, text.length - 10));
        i = text.length;
        break;
      }
      inRandom = true;
      i = start + 10;
    }
  }
  tail = (tail + Buffer.from(chunk).toString('latin1')).slice(-16);
}
const count = Number(new URL(url).searchParams.get('num'));
const randsize = Number(new URL(url).searchParams.get('randsize'));
const valid = res.status === 200 && head.startsWith('[{') && tail.endsWith('"}]') && digits === count * randsize;
process.stdout.write(JSON.stringify({ status: res.status, bytes, digits, valid }));
