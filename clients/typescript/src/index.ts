export { MuxClient, type MuxClientOptions, type MuxCallOptions, type MuxClientState } from "./client.js";
export { MuxError, StatusCode, statusName, type StatusCodeName } from "./errors.js";
export type { MuxHandler, MuxHandlerContext } from "./connection.js";
export type { WebSocketConstructor, WebSocketLike } from "./transport.js";
export { methodId } from "./protocol.js";
