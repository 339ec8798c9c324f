declare const __PETSTORE_VERSION__: string;
