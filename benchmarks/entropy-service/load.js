// The load generator, in its own process (never the server's): autocannon against one
// URL, rotating through the tokens so each stays under the 30-per-10-s limit. Prints the
// autocannon result as JSON on stdout.
//   node load.js <url> <seconds> <connections> [tokensFile]
import fs from 'node:fs';

import autocannon from 'autocannon';

const [url, seconds, connections, tokensFile] = process.argv.slice(2);
const tokens = tokensFile ? JSON.parse(fs.readFileSync(tokensFile, 'utf8')) : ['none'];
let next = 0;

const result = await autocannon({
  url,
  duration: Number(seconds),
  connections: Number(connections),
  pipelining: 1,
  requests: [
    {
      method: 'GET',
      setupRequest(request) {
        request.headers = { ...request.headers, accept: 'application/json', authorization: `Bearer ${tokens[next++ % tokens.length]}` };
        return request;
      },
    },
  ],
});
process.stdout.write(JSON.stringify(result));
