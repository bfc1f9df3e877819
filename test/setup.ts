// Test-wide defaults: quiet logs unless asked for.
process.env.TOOLGATE_LOG_LEVEL ??= 'silent';
