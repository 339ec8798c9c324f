// The core's face: plain types and small helpers every part may use; it imports no other part.
export type { Clock, Limits, LogLevel, Logger, NewPet, Pet, PetStatus } from './types.js';
export {
  DEFAULT_IDEMPOTENCY_RETENTION_HOURS, DEFAULT_MAX_QUEUED_WRITES, MAX_BAN_SECONDS, MAX_IDEMPOTENCY_RETENTION_HOURS, MAX_LIMIT, MAX_WORKERS,
} from './bounds.js';
export { IDEMPOTENCY_KEY_MAX_LENGTH, isIdempotencyKey } from './idempotency-key.js';
export { PET_STATUSES } from './types.js';
export { ApiError, ERROR_CODES, errorBody } from './errors.js';
export type { ErrorCode } from './errors.js';
export { StartError, asStartError } from './start-error.js';
export type { StartErrorKind } from './start-error.js';
export { MAX_CLOCK_ADVANCE_MS, MAX_CLOCK_OFFSET_MS, ManualClock, ServiceClock, serviceClock, systemClock } from './clock.js';
export { StoreGeneration } from './store-generation.js';
export type { AdvanceGeneration } from './store-generation.js';
export { batchingSink, functionLogger, isAscii, jsonLogger, silentLogger } from './log.js';
export type { BatchingSink, LogSink } from './log.js';
export { MAX_QUEUED_LOG_BYTES, guardedWriter, pieceWriter, safeStderr, safeStdout, safeStdoutBytes, settleStdio, stdoutLine, type ByteWrite, type WriteSync } from './stdio.js';
export type { PieceStream, PieceWriter, PieceWriterOptions, Write } from './stdio.js';
export { wholeLines } from './whole-lines.js';
export { describeError, errorCode } from './errno.js';
export { readJsonFile, readJsonFileSync } from './json-file.js';
export type { JsonFile } from './json-file.js';
export { clip, printable } from './text.js';
export { FileTooLargeError, NotRegularFileError, openRegularFileSync, readRegularFile, readRegularFileSync, sizeText } from './regular-file.js';
export { fsyncDir, fsyncDirSync, writeNewFileSynced } from './durable.js';
export { STEP_MS, STEP_RUN, Steps, step, yieldToLoop } from './steps.js';
export { PART_ENTRIES, PartedMap } from './parted-map.js';
export { reporter } from './report.js';
export type { ErrLine, Report } from './report.js';
