// Library entry point: every CLI command is also a function here.
export { addonInfo } from './native/addon.js';
export { versionInfo, type VersionInfo } from './version.js';
