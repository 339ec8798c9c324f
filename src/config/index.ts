// The config's face: its contract, parsing and loading, and the key digest.
export type { AddressRange, Config, ConfigDefaults, KeyEntry, TrustProxy } from './contract.js';
export type { AdminConfig, ClearKeyConfig, DigestKeyConfig, KeyConfig, PetstoreConfig, PlanLimits } from './file-format.js';
export { ConfigError } from './errors.js';
export { DEFAULT_PLANS } from './defaults.js';
export { CONFIG_FIELDS, type ConfigField, type ConfigFieldName } from './fields.js';
export { keyDigest } from './digest.js';
export { escapeKeyName, keyNameProblem } from './key-name.js';
export { adminKeyProblem, parseConfig } from './parse.js';
export { MAX_CONFIG_BYTES, loadConfigFile, repeatedMembers } from './load.js';
export { limitsUrlProblem } from './limits-url.js';
export { jsonSyntaxError } from './json-syntax.js';
export { percentEncodingProblem } from './url-encoding.js';
export { addressBytes, inRange, MAX_PROXY_HOPS } from './proxies.js';
