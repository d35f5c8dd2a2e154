/** The JVM the Java services run on: OpenJDK 17 (Hadoop 3.5 supports 17 on the server side; Java 23+ breaks it). */
import { existsSync } from 'node:fs';

const OPENJDK_17 = '/usr/lib/jvm/java-17-openjdk-amd64';

export function javaHome(): string | undefined {
  if (process.env['TRIBUTARY_JAVA_HOME'] !== undefined) return process.env['TRIBUTARY_JAVA_HOME'];
  return existsSync(OPENJDK_17) ? OPENJDK_17 : process.env['JAVA_HOME'];
}

export function javaCommand(): string {
  const home = javaHome();
  return home === undefined ? 'java' : `${home}/bin/java`;
}

export function javaEnvironment(): NodeJS.ProcessEnv {
  const home = javaHome();
  return home === undefined ? { ...process.env } : { ...process.env, JAVA_HOME: home };
}
