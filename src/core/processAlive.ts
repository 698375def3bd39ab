import { readFileSync } from 'node:fs';

/**
 * Whether a process of this machine still runs. `kill(pid, 0)` succeeds for a zombie too (a
 * process that has exited but that its parent has not reaped yet, `<defunct>` in ps): where the
 * init process reaps late, or in a container without one, that may last for ever. So on Linux a
 * zombie is read from `/proc/<pid>/stat` (state `Z`) and counts as dead.
 */
export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return !isZombie(pid);
}

function isZombie(pid: number): boolean {
  if (process.platform !== 'linux') return false;
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    // Gone between the two looks.
    return true;
  }
  // "pid (command) state ...": the command may hold spaces and parentheses, so look after the last ')'.
  return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) === 'Z';
}
