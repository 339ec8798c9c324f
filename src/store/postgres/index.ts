// The PostgreSQL store's face (see postgres-store.ts).
export { openPostgresStore } from './open.js';
export type { PostgresStoreOptions } from './open.js';
export { isPostgresUrl, redactUrl } from './settings.js';
export type { PostgresStore } from './postgres-store.js';
