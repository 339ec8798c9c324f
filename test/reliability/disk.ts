// Disk trouble under the running service, for real: a full tmpfs, an ext4 file system that
// turns read-only on an error (errors=remount-ro, as after a failing disk), and the data
// directory removed. Needs root (mount, losetup); `diskSupport()` says what works here.
import { execFileSync } from 'node:child_process';
import { closeSync, mkdirSync, openSync, rmSync, writeSync } from 'node:fs';
import { basename, join } from 'node:path';
import { tempDir } from '../support/bundle.js';
import { createPet, errorBodyProblem, httpRequest, listAll, type HttpResult, type PetRecord } from '../support/wire.js';

function run(cmd: string, args: readonly string[]): string {
  return execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'], encoding: 'utf8' });
}

/** undefined if the sandbox can mount a tmpfs; otherwise why not. */
export function tmpfsUnsupported(): string | undefined {
  const dir = tempDir();
  try {
    run('mount', ['-t', 'tmpfs', '-o', 'size=64k', 'tmpfs', dir]);
    run('umount', [dir]);
    return undefined;
  } catch (err) {
    return `cannot mount a tmpfs here (${(err as Error).message.split('\n')[0]})`;
  }
}

/** undefined if the sandbox can loop-mount an ext4 image and make it fail; otherwise why not. */
export function ext4Unsupported(): string | undefined {
  let disk: Ext4Disk | undefined;
  try {
    disk = Ext4Disk.create(4);
    return undefined;
  } catch (err) {
    return `cannot loop-mount an ext4 image here (${(err as Error).message.split('\n')[0]})`;
  } finally {
    disk?.destroy();
  }
}

export class Tmpfs {
  readonly dir: string;
  private constructor(dir: string) {
    this.dir = dir;
  }

  static mount(size: string): Tmpfs {
    const dir = tempDir();
    run('mount', ['-t', 'tmpfs', '-o', `size=${size}`, 'tmpfs', dir]);
    return new Tmpfs(dir);
  }

  /** Writes a filler file until the file system is full; returns its path. */
  fill(): string {
    const path = join(this.dir, `filler-${Date.now()}`);
    const fd = openSync(path, 'w');
    const block = Buffer.alloc(4096, 0x66);
    try {
      for (;;) writeSync(fd, block);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    } finally {
      closeSync(fd);
    }
    // Also take the last partial blocks, with small writes.
    const fd2 = openSync(`${path}-tail`, 'w');
    try {
      for (;;) writeSync(fd2, Buffer.alloc(64, 0x66));
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOSPC') throw err;
    } finally {
      closeSync(fd2);
    }
    return path;
  }

  unfill(path: string): void {
    rmSync(path, { force: true });
    rmSync(`${path}-tail`, { force: true });
  }

  unmount(): void {
    try {
      run('umount', ['-l', this.dir]);
    } catch {
      // already gone
    }
  }
}

/** An ext4 image on a loop device, mounted with errors=remount-ro. */
export class Ext4Disk {
  readonly dir: string;
  #image: string;
  #loop: string;
  readonly #old: Array<{ image: string; loop: string }> = [];

  private constructor(dir: string, image: string, loop: string) {
    this.dir = dir;
    this.#image = image;
    this.#loop = loop;
  }

  static create(megabytes: number): Ext4Disk {
    const work = tempDir();
    const image = join(work, 'disk.img');
    run('truncate', ['-s', `${megabytes}M`, image]);
    run('mkfs.ext4', ['-q', '-F', image]);
    const loop = run('losetup', ['-f', '--show', image]).trim();
    const dir = join(work, 'mnt');
    mkdirSync(dir);
    try {
      run('mount', ['-o', 'errors=remount-ro', loop, dir]);
      const disk = new Ext4Disk(dir, image, loop);
      // The error switch must exist, or this disk cannot be made to fail.
      run('sh', ['-c', `test -w /sys/fs/ext4/${basename(loop)}/trigger_fs_error`]);
      return disk;
    } catch (err) {
      try {
        run('umount', [dir]);
      } catch {
        // not mounted
      }
      run('losetup', ['-d', loop]);
      throw err;
    }
  }

  /** syncfs(2): everything written so far is on the disk image. */
  sync(): void {
    run('sync', ['-f', this.dir]);
  }

  /** An ext4 error: the kernel aborts the journal and the file system turns read-only, open files included. */
  failReadOnly(): void {
    run('sh', ['-c', `echo 1 > /sys/fs/ext4/${basename(this.#loop)}/trigger_fs_error`]);
  }

  /**
   * The operator's repair: the failed file system is detached (the service still holds files
   * on it), its image is checked and mounted again at the same place.
   */
  repair(): void {
    run('umount', ['-l', this.dir]);
    this.#old.push({ image: this.#image, loop: this.#loop });
    const image = `${this.#image}.repaired`;
    run('cp', ['--sparse=always', this.#image, image]);
    try {
      run('e2fsck', ['-f', '-y', image]);
    } catch (err) {
      // 1 and 2: errors corrected.
      const status = (err as { status?: number }).status;
      if (status !== 1 && status !== 2) throw err;
    }
    this.#image = image;
    this.#loop = run('losetup', ['-f', '--show', image]).trim();
    run('mount', ['-o', 'errors=remount-ro', this.#loop, this.dir]);
  }

  destroy(): void {
    try {
      run('umount', ['-l', this.dir]);
    } catch {
      // not mounted
    }
    for (const { loop } of [...this.#old, { image: this.#image, loop: this.#loop }]) {
      try {
        run('losetup', ['-d', loop]);
      } catch {
        // still busy (a lazily detached file system in use): the kernel frees it later
      }
    }
  }
}

/** Bookkeeping of a client that creates pets and checks what comes back. */
export class Ledger {
  readonly acked = new Map<number, PetRecord>();
  readonly refused: string[] = [];
  #n = 0;
  readonly #prefix: string;

  constructor(prefix: string) {
    this.#prefix = prefix;
  }

  /** One create: 201 (recorded), or a well-formed 503 service_unavailable; anything else throws. */
  async create(url: string, key: string): Promise<HttpResult> {
    const name = `${this.#prefix}-${this.#n++}`;
    const pet = { name, categoryId: this.#n, status: 'available' };
    const res = await createPet(url, key, pet);
    if (res.status === 201) {
      const got = JSON.parse(res.text) as PetRecord;
      if (got.name !== name) throw new Error(`create ${name} answered ${res.text}`);
      this.acked.set(got.id, got);
    } else if (res.status === 503) {
      const problem = errorBodyProblem({
        version: 'HTTP/1.1', status: 503, reason: '', bodyless: false, body: Buffer.from(res.text),
        headers: new Map([['content-type', [String(res.headers['content-type'])]]]),
      });
      if (problem !== undefined) throw new Error(`503 without a proper Error body: ${problem}: ${res.text}`);
      if ((JSON.parse(res.text) as { code: string }).code !== 'service_unavailable') throw new Error(`503 with ${res.text}`);
      if (res.headers['retry-after'] === undefined) throw new Error('503 without Retry-After');
      this.refused.push(name);
    } else {
      throw new Error(`create ${name}: ${res.status} ${res.text}`);
    }
    return res;
  }

  /** Creates until one is refused (503), at most `max`; the number of refusals seen. */
  async untilRefused(url: string, key: string, max: number): Promise<number> {
    for (let i = 0; i < max; i++) {
      if ((await this.create(url, key)).status === 503) return 1;
    }
    return 0;
  }

  /** Creates until one succeeds, at most `max`; how many attempts it took (0 = never). */
  async untilAccepted(url: string, key: string, max: number, pauseMs = 50): Promise<number> {
    for (let i = 1; i <= max; i++) {
      if ((await this.create(url, key)).status === 201) return i;
      await new Promise((r) => setTimeout(r, pauseMs));
    }
    return 0;
  }

  /** Reads keep working: the list has every acknowledged pet and a get finds one. */
  async checkReads(url: string, key: string): Promise<void> {
    const pets = await listAll(url, key);
    const ids = new Set(pets.map((p) => p.id));
    for (const id of this.acked.keys()) if (!ids.has(id)) throw new Error(`acknowledged pet ${id} missing from the list`);
    const some = [...this.acked.keys()].at(-1);
    if (some !== undefined) {
      const res = await httpRequest(`${url}/pets/${some}`, { headers: { authorization: `Bearer ${key}` } });
      if (res.status !== 200) throw new Error(`GET /pets/${some}: ${res.status} ${res.text}`);
    }
  }

  /** After a restart: exactly the acknowledged pets, with their fields (a 503 added nothing). */
  async checkExactly(url: string, key: string): Promise<void> {
    const pets = await listAll(url, key);
    const found = new Map(pets.map((p) => [p.id, JSON.stringify(p)]));
    for (const [id, pet] of this.acked) {
      if (found.get(id) !== JSON.stringify(pet)) throw new Error(`acknowledged pet ${JSON.stringify(pet)} lost; found ${String(found.get(id))}`);
    }
    const extra = pets.filter((p) => !this.acked.has(p.id));
    if (extra.length > 0) throw new Error(`pets that were refused (503) or never sent are stored: ${JSON.stringify(extra.slice(0, 5))}`);
  }
}
