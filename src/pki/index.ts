// The cluster PKI: one CA, KME and SAE certificates whose role is carried in a URI SAN.
export * from './certs.js';
export * from './files.js';
export * from './identity.js';
