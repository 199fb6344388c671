// SPDX-License-Identifier: MIT
// s3rver (pinned in package-lock.json) as tests/remote/s3serve.py runs it:
// on 127.0.0.1, path-style buckets only, with the gaps between s3rver 3.7.1
// and S3 that the S3 store's tests would trip on closed here, in this
// process, without touching node_modules.  tests/remote/README.md lists what
// s3rver does alone (s3serve.py --raw runs it so) and what this file changes:
//
//   - ranges: `bytes=-N` is the last N bytes (s3rver serves bytes 0-N);
//   - GET/HEAD If-Match: a different ETag is 412 PreconditionFailed;
//   - PUT and CompleteMultipartUpload honour If-None-Match: * (412 when the
//     key exists) and If-Match (412 on another ETag, 404 when absent), and
//     writes to one key are serialised, so the check and the write are one step;
//   - PUT is atomic: the object, its MD5 and its metadata are written beside
//     their places and renamed (the metadata last), so a reader never sees half
//     of it and a PUT that fails leaves the old object and ETag together
//     (s3rver writes in place; its ETag used to land before the bytes failed);
//     and the wait for the bytes allows the file not to exist yet (s3rver
//     resolves a PUT of a buffer before its file is even opened: a 500 then);
//   - listings are in S3's byte order (s3rver walks directories, so "a/x"
//     came before "a-b" and "a.txt", and continuation tokens skipped keys);
//   - DELETE leaves emptied directories alone (s3rver removed them, racing
//     with other deletes, 500 InternalError in DeleteObjects, and with PUTs);
//   - CompleteMultipartUpload checks the upload and its parts as S3 does
//     (NoSuchUpload, InvalidPart, InvalidPartOrder, EntityTooSmall under
//     5 MiB but for the last part; s3rver crashed on a part never uploaded);
//   - AbortMultipartUpload (DELETE ?uploadId=) exists (s3rver: 405).
//
//   node --openssl-legacy-provider s3rver_run.cjs DIRECTORY BUCKET...
//   prints "S3rver listening on 127.0.0.1:PORT" once it listens.
//
// --openssl-legacy-provider: s3rver encrypts ListObjectsV2 continuation
// tokens with DES, which OpenSSL 3 has only in its legacy provider.
'use strict';

const crypto = require('crypto');
const fsp = require('fs').promises;
const path = require('path');
const S3rver = require('s3rver');
const FilesystemStore = require('s3rver/lib/stores/filesystem');
const S3Error = require('s3rver/lib/models/error');
const objectCtrl = require('s3rver/lib/controllers/object');

const MIN_PART_BYTES = 5 * 1024 * 1024;
const PRECONDITION = 'At least one of the pre-conditions you specified did not hold';
const store = FilesystemStore.prototype;

function byteCompare(a, b) {
  return Buffer.compare(Buffer.from(a), Buffer.from(b));
}

function etagMatches(header, etag) {
  const strip = t => t.trim().replace(/^W\//, '').replace(/"/g, '');
  return header
    .split(',')
    .some(t => t.trim() === '*' || strip(t) === strip(etag));
}

async function metadataOrNull(s, bucket, key) {
  try {
    return await s.getMetadata(bucket, key);
  } catch (err) {
    if (err.code === 'ENOENT') return null;
    throw err;
  }
}

// One promise chain per bucket/key: fn() starts once every earlier writer's ended.
const keyChains = new Map();
async function keySerialised(id, fn) {
  const run = (keyChains.get(id) || Promise.resolve()).then(fn);
  const tail = run.catch(() => {});
  keyChains.set(id, tail);
  try {
    return await run;
  } finally {
    if (keyChains.get(id) === tail) keyChains.delete(id);
  }
}

// If-None-Match: * and If-Match on a write of ctx.params.key.
async function writePreconditionCheck(ctx) {
  const noneMatch = ctx.get('if-none-match');
  const match = ctx.get('if-match');
  if (!noneMatch && !match) return;
  const { bucket, key } = ctx.params;
  const meta = await metadataOrNull(ctx.store, bucket, key);
  if (noneMatch && noneMatch.trim() !== '*') {
    throw new S3Error('NotImplemented', 'If-None-Match on a write takes only *', {
      Header: 'If-None-Match',
    });
  }
  if (noneMatch && meta) {
    throw new S3Error('PreconditionFailed', PRECONDITION, { Condition: 'If-None-Match' });
  }
  if (match && !meta) {
    throw new S3Error('NoSuchKey', 'The specified key does not exist.', { Key: key });
  }
  if (match && !etagMatches(match, meta.etag)) {
    throw new S3Error('PreconditionFailed', PRECONDITION, { Condition: 'If-Match' });
  }
}

function serialisedWrite(original) {
  return ctx =>
    keySerialised(`${ctx.params.bucket}/${ctx.params.key}`, async () => {
      await writePreconditionCheck(ctx);
      return original(ctx);
    });
}
objectCtrl.putObject = serialisedWrite(objectCtrl.putObject);
objectCtrl.completeMultipartUpload = serialisedWrite(objectCtrl.completeMultipartUpload);

const getObject = objectCtrl.getObject;
objectCtrl.getObject = async function getObjectFixed(ctx) {
  const suffix = /^bytes=-(\d+)$/.exec((ctx.get('range') || '').trim());
  const match = ctx.get('if-match');
  if (suffix || match) {
    const meta = await metadataOrNull(ctx.store, ctx.params.bucket, ctx.params.key);
    if (meta && match && !etagMatches(match, meta.etag)) {
      throw new S3Error('PreconditionFailed', PRECONDITION, { Condition: 'If-Match' });
    }
    const size = meta ? Number(meta['content-length']) : 0;
    if (suffix && size > 0) {
      ctx.headers.range = `bytes=${Math.max(0, size - Number(suffix[1]))}-${size - 1}`;
    }
  }
  return getObject(ctx);
};

const putObject = store.putObject;
// s3rver writes an object's bytes, its MD5 and its metadata (the ETag) as
// three files.  All three go to temporary names and are renamed into place
// once the bytes are whole, the metadata last: a write that fails part way
// (a 500) leaves the old object and its old ETag as they were, never the new
// ETag over the old bytes, which a conditional retry would then trust.
const RESOURCES = ['object', 'object.md5', 'metadata.json'];
store.putObject = async function putObjectAtomic(object) {
  const suffix = `.writing-${crypto.randomBytes(6).toString('hex')}`;
  const final = {};
  for (const r of RESOURCES) final[r] = this.getResourcePath(object.bucket, object.key, r);
  // putObject writes where getResourcePath says; point it at tmp for this call.
  const resourcePath = this.getResourcePath;
  const self = Object.create(this, {
    getResourcePath: {
      value: (b, k, r) => (b === object.bucket && k === object.key && RESOURCES.includes(r)
        ? final[r] + suffix : resourcePath.call(this, b, k, r)),
    },
  });
  try {
    const result = await putObject.call(self, object);
    await waitForSize(final.object + suffix, result.size);
    for (const r of RESOURCES) {
      await fsp.rename(final[r] + suffix, final[r]).catch(err => {
        // s3rver writes no MD5 file for some objects: nothing to move.
        if (err.code !== 'ENOENT' || r === 'object') throw err;
      });
    }
    return result;
  } catch (err) {
    await Promise.all(RESOURCES.map(r => fsp.rm(final[r] + suffix, { force: true })));
    throw err;
  }
};

// s3rver resolves putObject when its hashing stream ends, not when the file
// stream has flushed, nor even opened the file (a Buffer's content resolves
// at once): wait until the file exists and holds every byte.
async function waitForSize(file, size) {
  for (let i = 0; i < 2000; i++) {
    const st = await fsp.stat(file).catch(err => {
      if (err.code !== 'ENOENT') throw err;
      return null;
    });
    if (st && st.size >= size) return;
    await new Promise(r => setTimeout(r, 1));
  }
  throw new Error(`${file}: short write`);
}

store.deleteObject = async function deleteObjectKeepingDirectories(bucket, key) {
  await Promise.all(['object', 'object.md5', 'metadata.json'].map(r =>
    fsp.unlink(this.getResourcePath(bucket, key, r)).catch(err => {
      if (err.code !== 'ENOENT') throw err;
    })));
};

const listObjects = store.listObjects;
store.listObjects = async function listObjectsInOrder(bucket, options) {
  const { delimiter = '', startAfter = '', prefix = '', maxKeys = Infinity } = options;
  const all = await listObjects.call(this, bucket, { prefix });
  const objects = [];
  const prefixes = new Set();
  let isTruncated = false;
  for (const o of all.objects.sort((a, b) => byteCompare(a.key, b.key))) {
    if (byteCompare(o.key, startAfter) <= 0) continue;
    const cut = delimiter ? o.key.indexOf(delimiter, prefix.length) : -1;
    if (cut !== -1) {
      prefixes.add(o.key.slice(0, cut + delimiter.length));
    } else if (objects.length < maxKeys) {
      objects.push(o);
    } else {
      isTruncated = true;
      break;
    }
  }
  return { objects, commonPrefixes: [...prefixes].sort(byteCompare), isTruncated };
};

function uploadDir(s, bucket, uploadId) {
  return path.join(s.getResourcePath(bucket, undefined, 'uploads'), uploadId || '-');
}

async function uploadCheck(s, bucket, uploadId) {
  try {
    await fsp.stat(path.join(uploadDir(s, bucket, uploadId), 'key'));
  } catch (err) {
    if (err.code !== 'ENOENT') throw err;
    throw new S3Error('NoSuchUpload', 'The specified upload does not exist. The upload ID ' +
      'may be invalid, or the upload may have been aborted or completed.', {
      UploadId: uploadId,
    });
  }
}

const putObjectMultipart = store.putObjectMultipart;
store.putObjectMultipart = async function putObjectMultipartChecked(bucket, uploadId, parts) {
  await uploadCheck(this, bucket, uploadId);
  const dir = uploadDir(this, bucket, uploadId);
  const sizes = [];
  for (let i = 0; i < parts.length; i++) {
    const { number, etag } = parts[i];
    if (!(number >= 1 && number <= 10000) || (i > 0 && number <= parts[i - 1].number)) {
      throw new S3Error('InvalidPartOrder', 'The list of parts was not in ascending order. ' +
        'The parts list must be specified in order by part number.');
    }
    let md5;
    try {
      md5 = (await fsp.readFile(path.join(dir, `${number}.md5`))).toString();
      sizes.push((await fsp.stat(path.join(dir, String(number)))).size);
    } catch (err) {
      if (err.code !== 'ENOENT') throw err;
    }
    if (md5 === undefined || md5 !== etag) {
      throw new S3Error('InvalidPart', 'One or more of the specified parts could not be ' +
        "found. The part may not have been uploaded, or the specified entity tag may not " +
        "match the part's entity tag.", { UploadId: uploadId, PartNumber: number, ETag: etag });
    }
  }
  const small = sizes.slice(0, -1).findIndex(size => size < MIN_PART_BYTES);
  if (small !== -1) {
    throw new S3Error('EntityTooSmall', 'Your proposed upload is smaller than the minimum ' +
      'allowed object size.', { ProposedSize: sizes[small], MinSizeAllowed: MIN_PART_BYTES,
      PartNumber: parts[small].number });
  }
  return putObjectMultipart.call(this, bucket, uploadId, parts);
};

// AbortMultipartUpload, ahead of s3rver's router (which answers 405).
async function abortMultipartUpload(ctx, next) {
  const m = /^\/([^/]+)\/./.exec(ctx.path);
  if (ctx.method !== 'DELETE' || !m || !('uploadId' in ctx.query)) return next();
  await uploadCheck(ctx.store, m[1], ctx.query.uploadId);
  await fsp.rm(uploadDir(ctx.store, m[1], ctx.query.uploadId), { recursive: true, force: true });
  ctx.status = 204;
}

async function main() {
  const [directory, ...buckets] = process.argv.slice(2);
  if (!directory) {
    console.error('usage: s3rver_run.cjs DIRECTORY BUCKET...');
    process.exit(2);
  }
  await fsp.mkdir(directory, { recursive: true });
  const server = new S3rver({
    address: '127.0.0.1',
    port: 0,
    directory,
    vhostBuckets: false,
    configureBuckets: buckets.map(name => ({ name, configs: [] })),
  });
  server.middleware.splice(server.middleware.length - 1, 0, abortMultipartUpload);
  const { address, port } = await server.run();
  console.log('S3rver listening on %s:%d', address, port);
}

main().catch(err => {
  console.error(err);
  process.exit(1);
});
