/**
 * Calendar arithmetic on `YYYY-MM-DD` strings and ISO 8601 date-time checks, without `Date`'s
 * surprises (`Date.parse('2024-02-30T00:00:00Z')` is March 1st; `Date.UTC` maps years 0–99 to
 * 1900–1999). Day numbers count days since 1970-01-01 (proleptic Gregorian calendar).
 */

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;

/**
 * Date, `T`, hours and minutes, optional seconds and fraction, then `Z` or `±hh:mm`. Everything
 * else (no time, no zone, a space instead of `T`, week or ordinal dates) is refused.
 */
const DATE_TIME = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(?:\.\d{1,9})?)?(?:Z|[+-](\d{2}):(\d{2}))$/;

function isLeapYear(year: number): boolean {
  return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return isLeapYear(year) ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** Days since 1970-01-01 of a real calendar date `YYYY-MM-DD`; null for anything else. */
export function dayNumber(date: string): number | null {
  const match = DATE.exec(date);
  if (!match) return null;
  const year = Number(match[1]);
  const month = Number(match[2]);
  const day = Number(match[3]);
  if (month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null;
  // Howard Hinnant's days_from_civil.
  const y = month <= 2 ? year - 1 : year;
  const era = Math.floor(y / 400);
  const yearOfEra = y - era * 400;
  const dayOfYear = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1;
  const dayOfEra = yearOfEra * 365 + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100) + dayOfYear;
  return era * 146097 + dayOfEra - 719468;
}

/** The `YYYY-MM-DD` of a day number (inverse of `dayNumber`). */
export function dateOfDayNumber(days: number): string {
  // Howard Hinnant's civil_from_days.
  const z = days + 719468;
  const era = Math.floor(z / 146097);
  const dayOfEra = z - era * 146097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36524) - Math.floor(dayOfEra / 146096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const mp = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * mp + 2) / 5) + 1;
  const month = mp < 10 ? mp + 3 : mp - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  return `${String(year).padStart(4, '0')}-${String(month).padStart(2, '0')}-${String(day).padStart(2, '0')}`;
}

export function isCalendarDate(value: string): boolean {
  return dayNumber(value) !== null;
}

/** `later − earlier` in days, or null when either is not a calendar date. */
export function daysBetween(earlier: string, later: string): number | null {
  const from = dayNumber(earlier);
  const to = dayNumber(later);
  return from === null || to === null ? null : to - from;
}

export function addDays(date: string, days: number): string | null {
  const from = dayNumber(date);
  return from === null ? null : dateOfDayNumber(from + days);
}

/**
 * An ISO 8601 date and time with a time zone, normalised to `toISOString()` (UTC, milliseconds),
 * or null when it is not one: the calendar date must be real, hours 00–23, minutes and seconds
 * 00–59, zone offsets up to ±23:59, and the moment must fall in the years 0000–9999.
 */
export function normalizeDateTime(value: string): string | null {
  const match = DATE_TIME.exec(value);
  if (!match || dayNumber(match[1]!) === null) return null;
  const [hours, minutes, seconds, offsetHours, offsetMinutes] = [match[2], match[3], match[4], match[5], match[6]].map((part) => Number(part ?? 0));
  if (hours! > 23 || minutes! > 59 || seconds! > 59 || offsetHours! > 23 || offsetMinutes! > 59) return null;
  const time = Date.parse(value);
  if (!Number.isFinite(time)) return null;
  const iso = new Date(time).toISOString();
  return /^\d{4}-/.test(iso) ? iso : null;
}

/** A moment a caller gives: the date, `T`, a time of at least hours and minutes, a zone (`Z`, `±hh:mm` or `±hhmm`). */
const MOMENT = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|([+-])(\d{2}):?(\d{2}))$/;

export type ParsedMoment = { ok: true; at: Date } | { ok: false; problem: string };

/**
 * The one strict reading of a moment given as a parameter (`as_of`, `updated_since`, `csr ...
 * --since/--until`), where `Date.parse` would roll a day that does not exist over into the next
 * month. With `dateOnly`, a calendar date alone is also taken (its midnight UTC). The problem
 * says what is wrong without naming the parameter: each caller puts its name first.
 */
export function parseMoment(value: string, options: { dateOnly?: boolean } = {}): ParsedMoment {
  const form = options.dateOnly ? 'an ISO 8601 date or date-time such as 2024-05-01 or 2024-05-01T00:00:00Z' : 'an ISO 8601 date-time such as 2024-05-01T00:00:00Z';
  if (options.dateOnly && DATE.test(value)) {
    const days = dayNumber(value);
    return days === null ? { ok: false, problem: `there is no ${value}` } : { ok: true, at: new Date(days * 86_400_000) };
  }
  const match = MOMENT.exec(value);
  if (!match) return { ok: false, problem: `not ${form}` };
  const [, date, hh, mm, ss = '00', fraction = '', zone, sign, zh = '00', zm = '00'] = match;
  const days = dayNumber(date!);
  if (days === null) return { ok: false, problem: `there is no ${date}` };
  if (Number(hh) > 23 || Number(mm) > 59 || Number(ss) > 59) return { ok: false, problem: `there is no time ${hh}:${mm}:${ss}` };
  if (zone !== 'Z' && (Number(zh) > 23 || Number(zm) > 59)) return { ok: false, problem: `there is no time zone ${sign}${zh}:${zm}` };
  const offset = zone === 'Z' ? 0 : (sign === '-' ? -1 : 1) * (Number(zh) * 60 + Number(zm));
  const ms = Math.floor(Number(`0${fraction || '.0'}`) * 1000);
  const at = days * 86_400_000 + ((Number(hh) * 60 + Number(mm) - offset) * 60 + Number(ss)) * 1000 + ms;
  return { ok: true, at: new Date(at) };
}

/** The one message for a parameter or option that is no moment: its name first, then why. */
export function momentProblem(name: string, value: string, problem: string): string {
  return problem.startsWith('not ') ? `${name} must be ${problem.slice(4)}, got "${value}"` : `${name} must be a real date and time: ${problem}, got "${value}"`;
}

const DAY_MS = 86_400_000;
/** The last day asked for and where it starts: every request asks, and nearly all on the same day. */
let lastDay = { start: 0, end: 0, day: '' };

/** YYYY-MM-DD (UTC) of `now`; formatting a date per request was a visible share of a GET. */
export function todayUtc(now: Date): string {
  const ms = now.getTime();
  if (ms < lastDay.start || ms >= lastDay.end) {
    const start = ms - (((ms % DAY_MS) + DAY_MS) % DAY_MS);
    lastDay = { start, end: start + DAY_MS, day: now.toISOString().slice(0, 10) };
  }
  return lastDay.day;
}
