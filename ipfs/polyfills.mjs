// Node 20 lacks Promise.withResolvers (Node 22 has it); parts of libp2p that `helia` loads call it.
// This module is imported first by server.mjs, before any dependency is evaluated.
if (typeof Promise.withResolvers !== 'function') {
  Object.defineProperty(Promise, 'withResolvers', {
    configurable: true,
    writable: true,
    value: function withResolvers () {
      let resolve
      let reject
      const promise = new this((res, rej) => {
        resolve = res
        reject = rej
      })
      return { promise, resolve, reject }
    }
  })
}
