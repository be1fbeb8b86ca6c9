// Node's http and https modules, taken as CommonJS. An ES import of 'node:http' builds the
// module's namespace by reading every export, including the lazy WebSocket, EventSource
// and CloseEvent getters, which load Node's bundled undici with http2, zlib, perf_hooks,
// worker_threads and web streams: about 12 MB of RSS in every process, a sixth of a
// feeder-only daemon (docs/feeder.md, "Memory"). Taken this way, only what is used loads.
// Types still come from `import type ... from 'node:http'`.
export const http = process.getBuiltinModule('node:http');
export const https = process.getBuiltinModule('node:https');
