/** What stops a server from starting, said in one line that tells the operator what to do. */

export class PortInUse extends Error {
  constructor(
    readonly port: number,
    readonly host: string,
  ) {
    super(`port ${port} on ${host} is already in use: stop the program using it, or choose another port with PORT=<number> (PORT=0 picks a free one)`);
  }
}

/** HOST names no address of this machine (a typo, a name that does not resolve, another machine's IP). */
export class HostUnavailable extends Error {
  constructor(host: string, code: string) {
    super(`cannot listen on HOST=${host}: ${code} (use an address of this machine, such as 127.0.0.1 or 0.0.0.0 for every interface)`);
  }
}
