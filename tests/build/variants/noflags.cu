// %VARIANT% lonely
