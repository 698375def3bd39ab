/** What stops a server from starting, said in one line that tells the operator what to do. */

export class PortInUse extends Error {
  constructor(
    readonly port: number,
    readonly host: string,
  ) {
    super(`port ${port} on ${host} is already in use: stop the program using it, or choose another port with PORT=<number> (PORT=0 picks a free one)`);
  }
}
