"""The names JavaScript/TypeScript and Go code may call without defining them: the language's
globals and builtins, Node's and the browser's, and the test frameworks' (jest, vitest, mocha
inject `describe`, `it`, `expect`… into test files). A bounded list: a global missing here is
still found in the symbol index or an imported package's files before anything is flagged."""

from __future__ import annotations

_JS = """
Array ArrayBuffer AggregateError Atomics BigInt BigInt64Array BigUint64Array Boolean DataView
Date Error EvalError FinalizationRegistry Float32Array Float64Array Function Infinity Int8Array
Int16Array Int32Array Intl Iterator JSON Map Math NaN Number Object Promise Proxy RangeError
ReferenceError Reflect RegExp Set SharedArrayBuffer String Symbol SyntaxError TypeError
URIError Uint8Array Uint8ClampedArray Uint16Array Uint32Array WeakMap WeakRef WeakSet
decodeURI decodeURIComponent encodeURI encodeURIComponent escape eval globalThis isFinite isNaN
parseFloat parseInt undefined unescape
AbortController AbortSignal Blob BroadcastChannel Buffer ByteLengthQueuingStrategy
CompressionStream CountQueuingStrategy Crypto CryptoKey CustomEvent DOMException
DecompressionStream Event EventTarget File FormData Headers MessageChannel MessageEvent
MessagePort Performance ReadableStream Request Response SubtleCrypto TextDecoder
TextDecoderStream TextEncoder TextEncoderStream TransformStream URL URLSearchParams WebAssembly
WebSocket Worker WritableStream atob btoa clearImmediate clearInterval clearTimeout console
crypto fetch global performance process queueMicrotask require module exports __dirname
__filename setImmediate setInterval setTimeout structuredClone
alert cancelAnimationFrame cancelIdleCallback close confirm customElements document
getComputedStyle history localStorage location matchMedia navigator open postMessage print
prompt requestAnimationFrame requestIdleCallback scroll scrollBy scrollTo sessionStorage self
window addEventListener removeEventListener dispatchEvent
Audio CSS CSSStyleSheet DOMParser DocumentFragment Element HTMLElement Image IntersectionObserver
KeyboardEvent MouseEvent MutationObserver Node Notification Option PointerEvent ResizeObserver
XMLHttpRequest XMLSerializer
describe it test expect beforeEach afterEach beforeAll afterAll jest vi suite context
before after fit fdescribe xit xdescribe xtest bench expectTypeOf assertType
$ jQuery
"""

_GO = """
append cap clear close complex copy delete imag len make max min new panic print println real
recover bool byte complex64 complex128 error float32 float64 int int8 int16 int32 int64 rune
string uint uint8 uint16 uint32 uint64 uintptr any comparable
"""

JS_GLOBALS = frozenset(_JS.split())
GO_BUILTINS = frozenset(_GO.split())
