// The subset of Kubo's RPC API (https://docs.ipfs.tech/reference/kubo/rpc/) that TRUST uses,
// served from a Helia node: add, cat, pin/add, pin/ls, pin/rm, block/stat, version.
//
// Wire behaviour follows Kubo so that one client works against this node, a Kubo daemon or a
// pinning service's Kubo-compatible endpoint:
//   - every command is POST /api/v0/<command>, arguments in the query string (`arg` may repeat);
//     other methods get 405 "405 - Method Not Allowed" (text/plain), unknown commands 404
//     "404 page not found", requests carrying an Origin or Referer header 403 "403 - Forbidden"
//     (Kubo's CSRF guard), a missing or malformed argument 400 with a plain-text reason;
//   - a command that fails answers {"Message": ..., "Code": 0, "Type": "error"} with HTTP 500
//     (Code 1 and HTTP 400 when the request itself is at fault, as Kubo's cmds.ErrClient);
//   - content that is not in the local blockstore is never searched for (no network): the error
//     is Kubo's offline one, "block was not found locally (offline): ipld: could not find <cid>".
//
// UnixFS layout is Kubo's (`ipfs add --cid-version=1`): 256 KiB fixed-size chunks, raw leaves,
// a balanced DAG of at most 174 links per node, a one-chunk file reduced to its raw leaf; so the
// CIDs equal Kubo's. Helia's own defaults (1 MiB chunks, 1024 links) would not.

import { once } from 'node:events'
import * as dagPb from '@ipld/dag-pb'
import busboy from 'busboy'
import { fixedSize } from 'ipfs-unixfs-importer/chunker'
import { balanced } from 'ipfs-unixfs-importer/layout'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'

export const KUBO_CHUNK_SIZE = 262_144
export const KUBO_MAX_LINKS = 174
const MAX_CHUNK_SIZE = 1_048_576 // Kubo refuses bigger chunks too (blocks must fit bitswap's 2 MiB)

/** A failed command: answered as Kubo's JSON error. */
export class CommandError extends Error {
  constructor (message, { status = 500, code = 0 } = {}) {
    super(message)
    this.status = status
    this.code = code
  }
}

/** The request itself is wrong (Kubo's cmds.ErrClient): HTTP 400, Code 1. */
export class ClientError extends CommandError {
  constructor (message, status = 400) {
    super(message, { status, code: 1 })
  }
}

/** Rejected before the command runs (Kubo's request parser): a plain-text body. */
export class RequestError extends Error {
  constructor (message, status = 400, headers = {}) {
    super(message)
    this.status = status
    this.headers = headers
  }
}

function notFoundOffline (cid) {
  return new CommandError(`block was not found locally (offline): ipld: could not find ${cid}`)
}

function isMissingBlock (err) {
  return err?.name === 'BlockNotFoundWhileOfflineError' || err?.name === 'NotFoundError'
}

// ---- query parsing (Kubo's go-ipfs-cmds conventions) ----

function boolOption (params, name, fallback) {
  if (!params.has(name)) return fallback
  const value = params.get(name)
  if (['', '1', 't', 'T', 'true', 'TRUE', 'True'].includes(value)) return true
  if (['0', 'f', 'F', 'false', 'FALSE', 'False'].includes(value)) return false
  throw new RequestError(`Could not convert value "${value}" to type "bool" (for option "-${name}")`)
}

function intOption (params, name, fallback) {
  if (!params.has(name)) return fallback
  const value = params.get(name)
  if (!/^-?\d+$/.test(value)) {
    throw new RequestError(`Could not convert value "${value}" to type "int" (for option "-${name}")`)
  }
  return Number.parseInt(value, 10)
}

function parseCid (text) {
  let value = text.trim()
  if (value.startsWith('/ipfs/')) value = value.slice('/ipfs/'.length)
  if (value.includes('/')) {
    throw new ClientError(`path "${text}" goes inside a DAG; this node resolves bare CIDs only (pass the CID of the file)`)
  }
  try {
    return CID.parse(value)
  } catch (err) {
    throw new ClientError(`invalid CID "${text}": ${err.message}`)
  }
}

function cidArgs (params, argName, { required = true } = {}) {
  const args = params.getAll('arg')
  if (required && args.length === 0) throw new RequestError(`argument "${argName}" is required`)
  return args.map((text) => ({ text, cid: parseCid(text) }))
}

// ---- DAG helpers ----

async function readBlock (helia, cid) {
  const parts = []
  try {
    for await (const part of helia.blockstore.get(cid, { offline: true })) parts.push(part)
  } catch (err) {
    if (isMissingBlock(err)) throw notFoundOffline(cid)
    throw err
  }
  return parts.length === 1 ? parts[0] : Buffer.concat(parts)
}

function childLinks (cid, bytes) {
  if (cid.code === raw.code) return []
  if (cid.code === dagPb.code) return dagPb.decode(bytes).Links
  throw new CommandError(`cannot walk ${cid}: codec 0x${cid.code.toString(16)} is neither dag-pb nor raw`)
}

/** Every CID of the DAG under `root` (root first, each once), read from the local blockstore only. */
async function * walkDag (helia, root) {
  const seen = new Set()
  const stack = [root]
  while (stack.length > 0) {
    const cid = stack.pop()
    const key = cid.toString()
    if (seen.has(key)) continue
    seen.add(key)
    const bytes = await readBlock(helia, cid)
    yield cid
    const links = childLinks(cid, bytes)
    for (let i = links.length - 1; i >= 0; i--) stack.push(links[i].Hash)
  }
}

/** Kubo's "Size" of an added file: the DAG's cumulative size (root block plus every link's Tsize). */
async function cumulativeSize (helia, cid) {
  const bytes = await readBlock(helia, cid)
  if (cid.code !== dagPb.code) return bytes.length
  return dagPb.decode(bytes).Links.reduce((acc, link) => acc + (link.Tsize ?? 0), bytes.length)
}

// ---- the commands ----

/**
 * The command handlers, bound to one Helia node.
 * `maxUploadBytes` caps each file of an `add` (the rest of an oversized part is read and dropped,
 * nothing of it stays pinned, and the request answers 413).
 */
export function kuboRpc ({ helia, fs, maxUploadBytes, versionInfo }) {
  // Helia's pin bookkeeping (check, then write) is not atomic: mutations run one at a time.
  let pinQueue = Promise.resolve()
  const serialPins = (fn) => {
    const run = pinQueue.then(fn, fn)
    pinQueue = run.catch(() => {})
    return run
  }

  async function existingPin (cid) {
    try {
      return await helia.pins.get(cid)
    } catch (err) {
      if (err?.name === 'NotFoundError') return null
      throw err
    }
  }

  async function pin (cid, recursive) {
    return serialPins(async () => {
      const current = await existingPin(cid)
      if (current != null) {
        const isRecursive = current.depth === Infinity
        if (isRecursive === recursive) return
        if (!recursive) throw new CommandError(`pin: ${cid} already pinned recursively`)
        for await (const _ of helia.pins.rm(cid)) {} // eslint-disable-line no-unused-vars
      }
      if (recursive) {
        // Check that the whole DAG is here first: Helia would leave half-counted blocks behind.
        for await (const _ of walkDag(helia, cid)) {} // eslint-disable-line no-unused-vars
      } else {
        await readBlock(helia, cid)
      }
      for await (const _ of helia.pins.add(cid, { depth: recursive ? Infinity : 0, offline: true })) {} // eslint-disable-line no-unused-vars
    })
  }

  function addOptions (params) {
    const cidVersion = intOption(params, 'cid-version', 0)
    if (cidVersion !== 0 && cidVersion !== 1) throw new ClientError(`unknown CID version ${cidVersion}; use 0 or 1`)
    const rawLeaves = boolOption(params, 'raw-leaves', cidVersion === 1)
    const hash = params.get('hash') ?? 'sha2-256'
    if (hash !== 'sha2-256') throw new ClientError(`hash function "${hash}" is not supported by this node; use sha2-256`)
    const chunker = params.get('chunker') ?? ''
    let chunkSize = KUBO_CHUNK_SIZE
    if (chunker !== '' && chunker !== 'default') {
      const match = /^size-(\d+)$/.exec(chunker)
      if (match == null) throw new ClientError(`chunker "${chunker}" is not supported by this node; use size-<bytes>`)
      chunkSize = Number.parseInt(match[1], 10)
      if (chunkSize < 1 || chunkSize > MAX_CHUNK_SIZE) {
        throw new ClientError(`chunker size ${chunkSize} is out of range: 1 to ${MAX_CHUNK_SIZE} bytes`)
      }
    }
    const maxLinks = intOption(params, 'max-file-links', KUBO_MAX_LINKS)
    if (maxLinks < 2 || maxLinks > 8192) throw new ClientError(`max-file-links ${maxLinks} is out of range: 2 to 8192`)
    for (const name of ['trickle', 'wrap-with-directory', 'only-hash', 'nocopy', 'fscache', 'inline']) {
      if (boolOption(params, name, false)) throw new ClientError(`option "${name}" is not supported by this node`)
    }
    return {
      pin: boolOption(params, 'pin', true),
      importer: {
        cidVersion,
        rawLeaves,
        chunker: fixedSize({ chunkSize }),
        layout: balanced({ maxChildrenPerNode: maxLinks }),
        reduceSingleLeafToSelf: true
      }
    }
  }

  async function add (req, res, params) {
    const options = addOptions(params)
    const contentType = req.headers['content-type'] ?? ''
    if (!contentType.toLowerCase().startsWith('multipart/form-data')) {
      throw new RequestError(`add expects a multipart/form-data body with one part per file, not "${contentType || 'none'}"`)
    }
    let parser
    try {
      // One byte over the limit is enough to know a file is too big; busboy drops the rest.
      parser = busboy({ headers: req.headers, limits: { fileSize: maxUploadBytes + 1 } })
    } catch (err) {
      throw new RequestError(`malformed multipart request: ${err.message}`)
    }
    const results = []
    let failure = null
    let queue = Promise.resolve()
    parser.on('file', (field, stream, info) => {
      queue = queue.then(async () => {
        if (failure != null) {
          stream.resume()
          return
        }
        try {
          results.push(await importFile(stream, info, options))
        } catch (err) {
          failure = err
          stream.resume() // keep the multipart parser going so the request is read to its end
        }
      })
    })
    const parsed = new Promise((resolve, reject) => {
      parser.on('close', resolve)
      parser.on('error', reject)
    })
    req.on('aborted', () => parser.destroy(new Error('the client closed the upload before its end')))
    req.pipe(parser)
    try {
      await parsed
    } catch (err) {
      await queue
      throw new ClientError(`malformed multipart request: ${err.message}`)
    }
    await queue
    if (failure != null) throw failure
    if (results.length === 0) {
      throw new ClientError('add received no file: send the content as a multipart part with a filename (field "file")')
    }
    if (options.pin) {
      for (const result of results) await pin(result.cid, true)
    }
    res.writeHead(200, {
      'Content-Type': 'application/json',
      'X-Chunked-Output': '1',
      'Trailer': 'X-Stream-Error'
    })
    for (const { name, cid, size } of results) {
      res.write(JSON.stringify({ Name: name, Hash: cid.toString(), Size: String(size) }) + '\n')
    }
    res.end()
  }

  async function importFile (stream, info, options) {
    let received = 0
    let tooBig = false
    stream.on('limit', () => { tooBig = true })
    async function * content () {
      // Not `for await (... of stream)`: leaving that loop destroys the stream, and busboy then
      // never finishes the request.
      for await (const chunk of stream.iterator({ destroyOnReturn: false })) {
        received += chunk.length
        if (tooBig || received > maxUploadBytes) {
          throw new ClientError(
            `file "${info.filename ?? ''}" exceeds this node's upload limit of ${maxUploadBytes} bytes; ` +
            'split it, or raise the limit (TRUST_IPFS__MAX_BLOB_BYTES, --max-upload-bytes)', 413)
        }
        yield chunk
      }
    }
    const cid = await fs.addByteStream(content(), options.importer)
    return { name: info.filename || cid.toString(), cid, size: await cumulativeSize(helia, cid) }
  }

  async function cat (req, res, params) {
    const [first] = cidArgs(params, 'ipfs-path')
    const offset = intOption(params, 'offset', 0)
    const length = intOption(params, 'length', undefined)
    if (offset < 0) throw new ClientError(`cannot specify negative offset ${offset}`)
    if (length != null && length < 0) throw new ClientError(`cannot specify negative length ${length}`)
    const chunks = fs.cat(first.cid, { offline: true, offset, length })[Symbol.asyncIterator]()
    let next
    try {
      next = await chunks.next() // the root resolves (or fails) before any header is sent
    } catch (err) {
      throw translate(err, first.cid)
    }
    res.writeHead(200, {
      'Content-Type': 'text/plain',
      'X-Stream-Output': '1',
      'Trailer': 'X-Stream-Error'
    })
    let closed = false
    res.on('close', () => { closed = true })
    try {
      while (!next.done && !closed) {
        if (!res.write(next.value)) await once(res, 'drain')
        next = await chunks.next()
      }
    } catch (err) {
      // Headers are gone: cut the connection before the chunked body's end, so that a client can
      // never take a truncated body for the whole file.
      process.stderr.write(`trust-ipfs: cat ${first.cid} broke off: ${translate(err, first.cid).message}\n`)
      res.destroy(err)
      return
    } finally {
      if (closed) await chunks.return?.()
    }
    res.end()
  }

  async function pinAdd (req, res, params) {
    const args = cidArgs(params, 'ipfs-path')
    const recursive = boolOption(params, 'recursive', true)
    for (const { cid } of args) await pin(cid, recursive)
    sendJson(res, { Pins: args.map(({ cid }) => cid.toString()) })
  }

  // Kubo's pin/rm: removes a recursive (or direct) pin; the blocks stay until garbage collection.
  // A CID that is not pinned is an error, as in Kubo ("not pinned or pinned indirectly").
  async function pinRm (req, res, params) {
    const args = cidArgs(params, 'ipfs-path')
    for (const { cid } of args) {
      await serialPins(async () => {
        if (await existingPin(cid) == null) throw new CommandError(`${cid} is not pinned or pinned indirectly`)
        for await (const _ of helia.pins.rm(cid)) {} // eslint-disable-line no-unused-vars
      })
    }
    sendJson(res, { Pins: args.map(({ cid }) => cid.toString()) })
  }

  async function pinLs (req, res, params) {
    const type = params.get('type') ?? 'all'
    if (!['all', 'recursive', 'direct', 'indirect'].includes(type)) {
      throw new CommandError(`invalid type '${type}', must be one of {direct, indirect, recursive, all}`)
    }
    const args = cidArgs(params, 'ipfs-path', { required: false })
    const keys = {}
    const entry = (kind) => ({ Type: kind, Name: '' })
    const recursiveRoots = async () => {
      const roots = []
      for await (const p of helia.pins.ls()) if (p.depth === Infinity) roots.push(p.cid)
      return roots
    }
    if (args.length > 0) {
      // Each named CID is looked up directly (one datastore read), not by listing every pin:
      // checking one blob stays constant-time however many the node holds.
      for (const { text, cid } of args) {
        const own = await existingPin(cid) // Helia keys pins by the CIDv1, so a v0 name finds its pin
        let kind = own == null ? null : (own.depth === Infinity ? 'recursive' : 'direct')
        if (kind == null && (type === 'all' || type === 'indirect') && await helia.pins.isPinned(cid)) {
          kind = 'indirect'
          for (const root of await recursiveRoots()) {
            if (await dagContains(root, cid)) {
              kind = `indirect through ${root}`
              break
            }
          }
        }
        if (kind == null || (type !== 'all' && !kind.startsWith(type))) {
          throw new CommandError(`path '${text}' is not pinned`)
        }
        keys[cid.toString()] = entry(kind)
      }
    } else {
      const pins = []
      for await (const p of helia.pins.ls()) pins.push(p)
      if (type === 'all' || type === 'indirect') {
        for (const root of pins.filter((p) => p.depth === Infinity)) {
          for await (const cid of walkDag(helia, root.cid)) {
            if (!cid.equals(root.cid)) keys[cid.toString()] = entry('indirect')
          }
        }
      }
      for (const p of pins) {
        const kind = p.depth === Infinity ? 'recursive' : 'direct'
        if (type === 'all' || type === kind) keys[p.cid.toString()] = entry(kind)
        else if (type === 'indirect') delete keys[p.cid.toString()]
      }
    }
    sendJson(res, { Keys: keys })
  }

  async function dagContains (root, cid) {
    for await (const c of walkDag(helia, root)) {
      if (Buffer.compare(c.multihash.bytes, cid.multihash.bytes) === 0) return true
    }
    return false
  }

  async function blockStat (req, res, params) {
    const [first] = cidArgs(params, 'cid')
    const bytes = await readBlock(helia, first.cid)
    sendJson(res, { Key: first.cid.toString(), Size: bytes.length })
  }

  async function version (req, res) {
    sendJson(res, versionInfo)
  }

  return {
    add,
    cat,
    'pin/add': pinAdd,
    'pin/ls': pinLs,
    'pin/rm': pinRm,
    'block/stat': blockStat,
    version
  }
}

function translate (err, cid) {
  if (err instanceof CommandError || err instanceof RequestError) return err
  if (isMissingBlock(err)) return notFoundOffline(cid)
  if (err?.name === 'NotAFileError') return new CommandError(`${cid} is a directory, not a file`)
  return new CommandError(err?.message ?? String(err))
}

export function sendJson (res, value, status = 200) {
  const body = JSON.stringify(value) + '\n'
  res.writeHead(status, {
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(body),
    'X-Chunked-Output': '1'
  })
  res.end(body)
}

export function sendText (res, status, message, headers = {}) {
  const body = message + '\n'
  res.writeHead(status, {
    'Content-Type': 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    'X-Content-Type-Options': 'nosniff',
    ...headers
  })
  res.end(body)
}

/** Answers a failed request the way Kubo does; a broken stream is cut (its headers are sent). */
export function sendError (res, err, cid) {
  if (res.headersSent) {
    res.destroy(err)
    return
  }
  if (err instanceof RequestError) {
    sendText(res, err.status, err.message, err.headers)
    return
  }
  const failure = translate(err, cid)
  sendJson(res, { Message: failure.message, Code: failure.code, Type: 'error' }, failure.status)
}
