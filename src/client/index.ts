export { EntropyClient, entropyEndpoint, entropyStream, fetchEntropy, BLOCK_SIZE, MAX_BLOCKS } from './client.js';
export type { EntropyClientOptions, RequestOptions } from './client.js';
export { EntropyClientError, classifyStatus, describeStatus, parseRetryAfter, type ErrorClass } from './errors.js';
export { RetryPolicy, sleep, type RetryPolicyOptions } from './retry.js';
