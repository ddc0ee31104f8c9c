// The local IPFS node of TRUST: Helia with a filesystem blockstore and datastore, no peer-to-peer
// networking, behind an HTTP server on 127.0.0.1 that speaks the Kubo RPC subset of rpc.mjs.
//
//   node ipfs/server.mjs --repo DIR [--host 127.0.0.1] [--port 5101] [--max-upload-bytes N]
//
// Prints one ready line on stdout once it accepts requests:
//   trust-ipfs ready http://127.0.0.1:5101 repo=/abs/DIR pid=1234
// Stops cleanly on SIGTERM or SIGINT: refuses new connections, lets requests in flight finish
// (up to 10 s), closes the stores and releases the repo lock, then prints "trust-ipfs stopped".
// Exit codes: 0 after a clean stop, 2 for bad arguments, a port in use or a repo in use, 1 otherwise.
//
// Repo layout: blocks/ (one file per block), datastore/ (pins, Helia's bookkeeping), repo.lock
// (the pid of the node using it). Blocks and pins survive a restart. Nothing is garbage collected.
import './polyfills.mjs'

import { closeSync, mkdirSync, openSync, readFileSync, readlinkSync, rmSync, writeSync } from 'node:fs'
import http from 'node:http'
import { resolve as resolvePath, join } from 'node:path'
import { parseArgs } from 'node:util'
import { unixfs } from '@helia/unixfs'
import { FsBlockstore } from 'blockstore-fs'
import { FsDatastore } from 'datastore-fs'
import { createHeliaLight } from 'helia'
import { CommandError, kuboRpc, RequestError, sendError } from './rpc.mjs'

const SERVER_VERSION = '1.0.0'
const HELIA_VERSION = JSON.parse(readFileSync(new URL('../node_modules/helia/package.json', import.meta.url))).version
const DRAIN_MS = 10_000

function fail (message, code = 2) {
  process.stderr.write(`trust-ipfs: ${message}\n`)
  process.exit(code)
}

function options () {
  let values
  try {
    ({ values } = parseArgs({
      options: {
        repo: { type: 'string' },
        host: { type: 'string', default: '127.0.0.1' },
        port: { type: 'string', default: '5101' },
        'max-upload-bytes': { type: 'string', default: String(64 * 1024 * 1024) }
      },
      strict: true
    }))
  } catch (err) {
    fail(`${err.message}\nusage: node ipfs/server.mjs --repo DIR [--host 127.0.0.1] [--port 5101] [--max-upload-bytes N]`)
  }
  if (!values.repo) fail('--repo DIR is required (the folder that holds the blocks and pins)')
  const port = Number(values.port)
  if (!Number.isInteger(port) || port < 0 || port > 65535) fail(`--port ${values.port} is not a TCP port (0 to 65535)`)
  const maxUploadBytes = Number(values['max-upload-bytes'])
  if (!Number.isSafeInteger(maxUploadBytes) || maxUploadBytes < 1) {
    fail(`--max-upload-bytes ${values['max-upload-bytes']} is not a positive number of bytes`)
  }
  return { repo: resolvePath(values.repo), host: values.host, port, maxUploadBytes }
}

/** Whether `pid` is a running IPFS node on `repo`. A pid left in a stale lock may since belong to
 *  anything, another node on another repo included (a repo copied with its lock while its node ran,
 *  or a pid reused after a reboot): only a node whose --repo is this repo holds it. */
function runsANodeOn (pid, repo) {
  try {
    process.kill(pid, 0)
  } catch (err) {
    if (err.code !== 'EPERM') return false
  }
  let argv
  try {
    argv = readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0')
  } catch {
    return true // no /proc: a live pid is all we can know
  }
  if (!argv.some((part) => part.endsWith('server.mjs'))) return false
  let cwd = '/'
  try {
    cwd = readlinkSync(`/proc/${pid}/cwd`)
  } catch {}
  return argv.some((part, index) =>
    (part === '--repo' && argv[index + 1] !== undefined && resolvePath(cwd, argv[index + 1]) === repo) ||
    (part.startsWith('--repo=') && resolvePath(cwd, part.slice('--repo='.length)) === repo))
}

/** Takes the repo for this process: two nodes writing one blockstore would corrupt its pins. */
function lockRepo (repo) {
  const path = join(repo, 'repo.lock')
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o644)
      writeSync(fd, `${process.pid}\n`)
      closeSync(fd)
      return () => rmSync(path, { force: true })
    } catch (err) {
      if (err.code !== 'EEXIST') throw err
      const owner = Number.parseInt(readFileSync(path, 'utf8'), 10)
      if (Number.isInteger(owner) && owner !== process.pid && runsANodeOn(owner, repo)) {
        fail(`repo ${repo} is in use by process ${owner}; stop that node first (trust ipfs down) or pick another --repo`)
      }
      rmSync(path, { force: true }) // left by a node that died without stopping
    }
  }
  fail(`cannot lock repo ${repo}: ${path} keeps reappearing`)
}

async function main () {
  const [major] = process.versions.node.split('.').map(Number)
  if (major < 20) fail(`Node.js 20 or newer is required, not ${process.version}`)
  const config = options()
  mkdirSync(config.repo, { recursive: true })
  const unlock = lockRepo(config.repo)

  const blockstore = new FsBlockstore(join(config.repo, 'blocks'))
  const datastore = new FsDatastore(join(config.repo, 'datastore'))
  await blockstore.open()
  await datastore.open()
  // The light node: no libp2p, no bitswap, no HTTP gateways, no routers. Content that is not in
  // the blockstore is simply not found.
  const helia = await createHeliaLight({ blockstore, datastore })
  await helia.start()

  const handlers = kuboRpc({
    helia,
    fs: unixfs(helia),
    maxUploadBytes: config.maxUploadBytes,
    versionInfo: {
      Version: HELIA_VERSION,
      Commit: '',
      Repo: 'helia-fs-1',
      System: `${process.arch}/${process.platform}`,
      Golang: `node ${process.version}`,
      Implementation: `trust-ipfs/${SERVER_VERSION} (helia ${HELIA_VERSION})`
    }
  })

  let inFlight = 0
  const server = http.createServer(async (req, res) => {
    inFlight++
    res.on('close', () => { inFlight-- })
    const url = new URL(req.url ?? '/', 'http://localhost')
    try {
      const command = url.pathname.startsWith('/api/v0/') ? url.pathname.slice(8).replace(/\/+$/, '') : null
      const handler = command != null && Object.hasOwn(handlers, command) ? handlers[command] : null
      if (handler == null) throw new RequestError('404 page not found', 404)
      if (req.method === 'OPTIONS') {
        res.writeHead(204, { Allow: 'OPTIONS, POST' })
        res.end()
        return
      }
      if (req.method !== 'POST') throw new RequestError('405 - Method Not Allowed', 405, { Allow: 'OPTIONS, POST' })
      if (req.headers.origin || req.headers.referer) throw new RequestError('403 - Forbidden', 403)
      if (command !== 'add') req.resume() // arguments travel in the query; drop any body
      await handler(req, res, url.searchParams)
    } catch (err) {
      req.resume()
      if (!(err instanceof RequestError) && !(err instanceof CommandError)) {
        process.stderr.write(`trust-ipfs: ${req.method} ${url.pathname}: ${err?.stack ?? err}\n`)
      }
      sendError(res, err)
    }
  })

  let stopping = false
  const stop = async (signal) => {
    if (stopping) return
    stopping = true
    process.stdout.write(`trust-ipfs stopping (${signal})\n`)
    const closed = new Promise((resolve) => server.close(resolve))
    server.closeIdleConnections()
    const deadline = setTimeout(() => server.closeAllConnections(), inFlight > 0 ? DRAIN_MS : 0)
    await closed
    clearTimeout(deadline)
    await helia.stop()
    await blockstore.close()
    await datastore.close()
    unlock()
    process.stdout.write('trust-ipfs stopped\n')
    process.exit(0)
  }
  process.on('SIGTERM', () => { stop('SIGTERM') })
  process.on('SIGINT', () => { stop('SIGINT') })

  server.on('error', async (err) => {
    await helia.stop()
    await blockstore.close()
    await datastore.close()
    unlock()
    if (err.code === 'EADDRINUSE') {
      fail(`${config.host}:${config.port} is already in use (another IPFS node?); stop it or pick another --port`)
    }
    fail(`cannot listen on ${config.host}:${config.port}: ${err.message}`)
  })
  server.listen(config.port, config.host, () => {
    const { port } = server.address()
    process.stdout.write(`trust-ipfs ready http://${config.host}:${port} repo=${config.repo} pid=${process.pid}\n`)
  })
}

main().catch((err) => fail(err?.stack ?? String(err), 1))
