/**
 * A loopback host, with or without its port: where the local runtime and its simulators listen.
 * Plain http is allowed to these only (and only with ALLOW_INSECURE_PLATFORM_URLS for platform calls).
 */
export const LOOPBACK_HOST = /^(127\.\d+\.\d+\.\d+|localhost|\[::1\])(:\d+)?$/i;
